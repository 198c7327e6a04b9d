#!/usr/bin/env bash
# `make down`: stop exactly what `make up` started (data is kept for a fast restart).
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
bash dev/operator.sh stop
bash dev/prometheus.sh stop || true
bash dev/capi/down.sh || true
bash dev/shim/down.sh || true
bash dev/openstack/lab.sh down || true
bash dev/kube/down.sh || true
