# TrnUltraCluster: `make synth` and `make test` set up everything they need from the pinned
# files (requirements*.txt, package-lock.json) on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := synth

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CHECKOV_VENV := .venv-checkov
# The app defines one stack, named by the configuration's stack_name (default TrnUltraCluster):
# synth and diff take every stack when none is named, deploy and destroy need --all.
ALL_STACKS := --all
OUT := cdk.out
# Optional profile file: make synth PROFILE=profiles/ultracluster-16.yaml
PROFILE ?=
CDK_CONTEXT := $(if $(PROFILE),-c config=$(PROFILE))

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PYTHONPATH := $(CURDIR):$(CURDIR)/training
# Python's default: cache the bytecode of what it imports (some machines, container images
# among them, set PYTHONDONTWRITEBYTECODE; then every test process, worker and CLI subprocess
# compiles the package and the test modules again). __pycache__ is git-ignored and left out of
# the lifecycle uploads, the Lambda code, the image's build context and the wheel (the last two
# tested): the assets' hashes are the same with and without it.
export PYTHONDONTWRITEBYTECODE :=
CDK := npx --no-install cdk

.PHONY: synth test docs snapshots test-jobs test-matrix test-nodes test-tiers test-xla test-slurm deploy destroy diff bench diagram setup setup-dev clean

$(VENV)/.runtime: requirements.txt pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt training/requirements-cpu.txt
	$(VPY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

# checkov in its own venv: it pins a boto3 that the project's requirements exclude.
$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	PYTHONPATH= $(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(VENV)/.runtime node_modules/.installed
setup-dev: $(VENV)/.dev $(CHECKOV_VENV)/.installed node_modules/.installed

## synth: synthesize the stack offline (no AWS account needed) and print a summary
synth: setup
	$(CDK) synth --quiet $(CDK_CONTEXT)
	$(VPY) -m trn_ultracluster.summary $(OUT)

## test: the test suite (CDK templates, cdk-nag, cfn-lint, checkov, config, the CLI, the node
## scripts against a fake root, the training program on CPU in one process)
test: setup-dev
	$(VPY) -m pytest -n auto --dist worksteal

## test-matrix: the whole-stack checks (cfn-lint, checkov, limits, outputs, cdk-nag) of 2,000
## nodes on each orchestrator and EFA layout, and of the mixed and teams profiles on the other
## orchestrators; cfn-lint and checkov of five profiles (make test checks the default and
## every profile otherwise: tests/stacks/conftest.py LINTED_IN_MATRIX)
test-matrix: setup-dev
	$(VPY) -m pytest -n auto --dist worksteal -m 'matrix and not jobs and not nodes and not slurm and not xla'

## test-jobs: real multi-process jobs on this CPU (torchrun with gloo, two local nodes): the
## training program killed and resumed, the examples as their READMEs run them, standalone jobs
test-jobs: setup-dev
	$(VPY) -m pytest -n auto --dist worksteal -m 'jobs and not matrix and not nodes and not slurm and not xla'

## test-nodes: the node scripts' other scenarios against a fake root (the HyperPod Slurm
## lifecycle script's and the standalone setup's reruns, fall-backs and failures, the job
## CLI's node script on two local nodes); make test runs each script's main paths
test-nodes: setup-dev
	$(VPY) -m pytest -n auto --dist worksteal -m 'nodes and not jobs and not matrix and not slurm and not xla'

## test-tiers: test-matrix, test-nodes and test-jobs in one pytest run, as .ci/run runs them
## (the workers start and collect once, and share the three tiers' tests as they free up),
## without the example runs that test-slurm repeats with the same checks (repeated_on_slurm)
test-tiers: setup-dev
	$(VPY) -m pytest -n auto --dist worksteal -m '(matrix or nodes or jobs) and not slurm and not xla and not repeated_on_slurm'

## docs: regenerate docs/configuration.md and docs/trn-ultracluster.schema.json from the
## configuration model (tests/config/test_reference.py fails when they are stale)
docs: setup
	$(VPY) -m trn_ultracluster.config.reference --write

## snapshots: regenerate tests/snapshots/*.json (the backstop of tests/test_snapshots.py) and
## print, per snapshot, the resources that changed since the last commit (added, removed,
## replaced, updated logical ids with their types): review that list before committing
snapshots: setup-dev
	UPDATE_SNAPSHOTS=1 $(VPY) -m pytest -q -p no:cacheprovider tests/test_snapshots.py -k test_snapshot
	$(VPY) tools/snapshot_changes.py

## test-xla: the training program on XLA:CPU in its own venv (.venv-xla, torch-xla 2.9.0)
test-xla:
	bash training/test-xla.sh

## test-slurm: the HyperPod job path on a real Slurm started here (2 nodes on this host, with
## slurmdbd on a private MariaDB and two teams; as root, installs Slurm, MUNGE and MariaDB
## with apt-get when missing; see tests/slurm)
test-slurm: $(VENV)/.dev
	bash tests/slurm/ensure-slurm.sh
	TRN_REQUIRE_SLURM=1 $(VPY) -m pytest -m slurm tests/slurm

## deploy / destroy / diff: need AWS credentials and `cdk bootstrap` (docs/deploy.md). The IAM
## principal that deploys becomes EKS cluster admin (eks.deployer_principal_arn).
DEPLOYER = $$($(VPY) -m trn_ultracluster.cli.principal)

## Before it deploys, `trn-ultracluster plan` compares the deployed stack with the
## configuration and stops when the deploy would replace or remove data or nodes, or roll
## nodes (the file system replaced, node groups rolled...: docs/changes.md); ALLOW_REPLACE=1
## deploys anyway (ALLOW_FSX_REPLACE=1, its earlier name, too), except a deploy CloudFormation
## would refuse (a node group update that combines a version-type change with another: plan
## says how to split it; docs/deploy.md "Upgrading a deployed stack").
deploy: setup
	@deployer=$(DEPLOYER) && \
	$(VPY) -m trn_ultracluster plan $(CDK_CONTEXT) -c eks.deployer_principal_arn=$$deployer \
	  $(if $(filter 1,$(ALLOW_REPLACE) $(ALLOW_FSX_REPLACE)),--allow-replace) || { \
	    echo "make deploy: stopped by plan (above); ALLOW_REPLACE=1 deploys anyway, unless plan says CloudFormation would refuse it" >&2; exit 1; } && \
	$(CDK) deploy $(ALL_STACKS) $(CDK_CONTEXT) -c eks.deployer_principal_arn=$$deployer \
	  --outputs-file $(OUT)/outputs.json

destroy: setup
	$(CDK) destroy $(ALL_STACKS) $(CDK_CONTEXT)

diff: setup
	@deployer=$(DEPLOYER) && \
	$(CDK) diff $(CDK_CONTEXT) -c eks.deployer_principal_arn=$$deployer

## bench: synth time against a one-bucket CDK app (prints the ratio), and each profile's
## estimated create time (critical path of its template), and how far each orchestrator scales
## (benchmarks/scale.py)
bench: setup-dev
	$(VPY) benchmarks/synth.py
	$(VPY) benchmarks/deploy_time.py
	$(VPY) benchmarks/scale.py

## diagram: an architecture picture of the stack for each orchestrator of the registry
## (default configuration otherwise), docs/diagrams/<orchestrator>.svg, drawn by cdk-dia
## (tools/diagram/package.json, installed by this target only) with Graphviz's dot
DIAGRAMS := docs/diagrams
DIAGRAM_OUT := $(OUT)/diagram

DIAGRAM_NPM := tools/diagram
$(DIAGRAM_NPM)/node_modules/.installed: $(DIAGRAM_NPM)/package.json $(DIAGRAM_NPM)/package-lock.json
	npm ci --prefix $(DIAGRAM_NPM) --no-audit --no-fund --loglevel=error
	touch $@

diagram: setup $(DIAGRAM_NPM)/node_modules/.installed
	@command -v dot >/dev/null || { echo "make diagram: Graphviz's dot is not on PATH." \
	  "Install Graphviz: apt-get install graphviz (Debian, Ubuntu), dnf install graphviz" \
	  "(Fedora), brew install graphviz (macOS); then run make diagram again." >&2; exit 1; }
	@set -e; for o in $$($(VPY) -m trn_ultracluster.diagram orchestrators); do \
	  echo "diagram: $$o"; \
	  $(CDK) synth --quiet -c orchestrator=$$o -o $(DIAGRAM_OUT)/$$o; \
	  $(VPY) -m trn_ultracluster.diagram customize $(DIAGRAM_OUT)/$$o/tree.json $(DIAGRAM_OUT)/$$o.tree.json; \
	  $(DIAGRAM_NPM)/node_modules/.bin/cdk-dia --tree $(DIAGRAM_OUT)/$$o.tree.json --target $(DIAGRAM_OUT)/$$o.png; \
	  $(VPY) -m trn_ultracluster.diagram svg $(DIAGRAM_OUT)/$$o.dot $(DIAGRAMS)/$$o.svg; \
	  echo "  $(DIAGRAMS)/$$o.svg ($$(( $$(wc -c < $(DIAGRAMS)/$$o.svg) / 1000 )) kB)"; \
	done

clean:
	rm -rf $(OUT) .pytest_cache
