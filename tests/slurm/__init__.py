"""Real-Slurm tests of the HyperPod job path (make test-slurm)."""
