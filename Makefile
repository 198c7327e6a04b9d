# Kumo's two front doors: `make up` (local Kubernetes API + OpenStack + Kumo + the seed
# examples) and `make test` (the whole suite, starting what it needs). `make chaos` is the
# long chaos run (100 kills, 10 min of faults, outages; docs/testing.md).
SHELL := /bin/bash
VENV := .venv

.PHONY: up down test chaos unit lint crds venv bench clean image

up: venv
	bash dev/up.sh

down:
	bash dev/down.sh

test: venv
	bash dev/test.sh

chaos: venv
	bash dev/chaos.sh

unit: venv
	$(VENV)/bin/pytest tests/unit -q

lint: venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy src
	$(VENV)/bin/lint-imports

crds: venv
	$(VENV)/bin/kumo crds > deploy/base/crds/kumo.dev.yaml

venv:
	bash dev/venv.sh

# The operator image (podman, Debian bookworm from scratch): localhost/kumo:dev
image: venv
	bash dev/image/build.sh

bench: venv
	$(VENV)/bin/python -m bench

clean: down
	rm -rf .kumo-dev $(VENV)
