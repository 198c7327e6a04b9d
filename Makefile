# Kumo's two front doors: `make up` (local Kubernetes API + OpenStack + Kumo + the seed
# examples) and `make test` (the whole suite, starting what it needs).
SHELL := /bin/bash
VENV := .venv

.PHONY: up down test unit lint crds venv bench clean image

up: venv
	bash dev/up.sh

down:
	bash dev/down.sh

test: venv
	bash dev/test.sh

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
