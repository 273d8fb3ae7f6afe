"""Tests of the standalone orchestrator (trn_ultracluster/orchestrators/standalone)."""
