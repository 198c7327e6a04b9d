# Kumo's two front doors: `make up` (local Kubernetes API + OpenStack + Kumo + the seed
# examples) and `make test` (the whole suite, starting what it needs). `make chaos` is the
# long chaos run (100 kills, 10 min of faults, outages; docs/testing.md).
SHELL := /bin/bash
VENV := .venv

.PHONY: helm helm-bin release
.PHONY: up down test test-long test-clusters chaos unit lint crds rbac argocd monitoring venv bench bench-fleet bench-memory bench-group bench-idle bench-stateful bench-octavia bench-fip clean image

up: venv
	bash dev/up.sh

down:
	bash dev/down.sh

test: venv
	bash dev/test.sh

chaos: venv
	bash dev/chaos.sh

# The slow variants of checks `make test` keeps small (tests marked `long`; docs/testing.md).
test-long: venv
	bash dev/test-long.sh

# Cluster API in the lab (issue 42; docs/clusters.md): the CAPI core, kubeadm bootstrap and
# control-plane managers on a management cluster of their own (https://127.0.0.1:6445),
# then their tests, and the boot shim's (real kubeadm nodes for Nova's fake servers; the
# test module starts and stops dev/shim/). Not part of `make test`, which does not
# collect them.
test-clusters: venv
	bash dev/capi/up.sh >/dev/null
	KUMO_TEST_CLUSTERS=1 PYTHONPATH=src $(VENV)/bin/pytest tests/integration/test_capi_lab.py tests/integration/test_boot_shim.py -m clusters -q -p no:cacheprovider

unit: venv
	$(VENV)/bin/pytest tests/unit -q

lint: venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy src bench tests/unit/ports_conformance.py
	$(VENV)/bin/lint-imports

crds: venv
	$(VENV)/bin/kumo crds > deploy/base/crds/kumo.dev.yaml
	$(VENV)/bin/kumo crds --group infrastructure.kumo.dev > deploy/base/crds/infrastructure.kumo.dev.yaml

rbac: venv
	$(VENV)/bin/kumo rbac > deploy/base/rbac.yaml

# Argo CD health for every kind: deploy/argocd/argocd-cm.yaml and its kustomize Component,
# from deploy/argocd/health.lua and the kind registry (docs/install.md).
argocd: venv
	$(VENV)/bin/kumo argocd-cm --component deploy/argocd

# The plain Prometheus rule file from the PrometheusRule (deploy/monitoring/; docs/operations.md).
monitoring: venv
	$(VENV)/bin/python dev/monitoring/rules.py

venv:
	bash dev/venv.sh

# The Helm chart deploy/helm/kumo, generated from deploy/ (dev/helm/chart.py; docs/install.md).
helm: venv
	$(VENV)/bin/python dev/helm/chart.py

# Helm itself, built from its Go module and cached (dev/helm/build.sh prints its path).
helm-bin:
	bash dev/helm/build.sh

# The release bundle in dist/: kumo-<version>.yaml, the image archive, its SBOM (dev/release.sh).
release: venv
	bash dev/release.sh

# The operator image (podman, Debian bookworm from scratch): localhost/kumo:dev
image: venv
	bash dev/image/build.sh

# Benchmarks (not part of `make test`; docs/performance.md). They take the lab lock
# (/tmp/kumo-lab.lock) themselves and run this checkout's Kumo (PYTHONPATH=src).
# make bench BENCH_N=20 · make bench-fleet FLEET_N=1000 FLEET_GROUPS=10 FLEET_CONTENDERS=kumo
# · BENCH_ARGS="--repairs 20 --repeat 3 --profile"
BENCH_N ?= 20,100
FLEET_N ?= 300
FLEET_GROUPS ?= 3
FLEET_CONTENDERS ?= kumo,direct
# Real stack: Kumo vs. a direct openstacksdk script vs. Heat (installed into the lab if missing).
bench: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench stack --n $(BENCH_N) $(BENCH_ARGS)

# A big fleet: by default the N = 300 (3 × 100) pair, Kumo then the direct script doing the
# same groups (converge, delete, requests per service, Kumo's CPU against the lab's); Kumo
# once converged: idle requests, repairs, RSS, restart. Each group has its own LB (and, for
# Kumo, a DNS record).
bench-fleet: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench fleet --n $(FLEET_N) --groups $(FLEET_GROUPS) --contenders $(FLEET_CONTENDERS) $(BENCH_ARGS)

# What one member change costs the lab's Octavia by pool size (batch vs single creates).
bench-octavia: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench octavia-cost $(BENCH_ARGS)

# A FloatingIP following its VM through 8 out-of-band server deletes, alternating with a
# VM without an address (its own repair); p50/p95 and their ratios (lab; 16 server rebuilds).
FIP_DELETES ?= 8
bench-fip: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench fip-follow --deletes $(FIP_DELETES) $(BENCH_ARGS)

# The in-memory drift benchmark (no lab needed).
bench-memory: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench memory

# Kumo's CPU per VM by group size, in memory (no lab needed; flame graphs: BENCH_ARGS=
# "--profile .kumo-dev/bench/group").
bench-group: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench group $(BENCH_ARGS)

# Idle Neutron requests/min with 10 and 100 security groups (issue 22; lab, ~3 min).
IDLE_GROUPS ?= 10,100
bench-idle: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench idle-neutron --groups $(IDLE_GROUPS) $(BENCH_ARGS)

# A stateful group (identity Ordinal, one 1-GiB volume per member) against the direct
# script, N = 50, three alternating pairs (issue 23; lab, ≈ 15 min).
STATEFUL_N ?= 50
STATEFUL_REPEAT ?= 3
bench-stateful: venv
	PYTHONPATH=src $(VENV)/bin/python -m bench stateful --n $(STATEFUL_N) --repeat $(STATEFUL_REPEAT) $(BENCH_ARGS)

clean: down
	rm -rf .kumo-dev $(VENV)
