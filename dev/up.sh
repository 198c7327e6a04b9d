#!/usr/bin/env bash
# `make up`: a real Kubernetes API + a real OpenStack on loopback, Kumo's CRDs,
# the operator itself, and the seed examples applied to the `default` namespace.
# Idempotent: a second run reuses whatever is already running.
source "$(dirname "$0")/lib.sh"
cd "$KUMO_ROOT"
bash dev/venv.sh
bash dev/kube/up.sh
bash dev/openstack/lab.sh up
source dev/kube/env.sh

log "installing Kumo's CRDs (kumo.dev, and the Cluster API provider's infrastructure.kumo.dev)"
"$KUBECTL" apply -f deploy/base/crds/ >/dev/null
"$KUBECTL" wait --for=condition=Established -f deploy/base/crds/ --timeout=60s >/dev/null

bash dev/operator.sh start
bash dev/prometheus.sh start   # the lab's Prometheus, scraping the operator (docs/operations.md)

log "applying examples/ to namespace default"
"$KUBECTL" apply -n default -f examples/ >/dev/null

log "waiting for the examples to become Ready (VMs, group, load balancer, share, keypair)"
for obj in vm/vm-sample vmg/virtualmachinegroup-sample lb/loadbalancer-sample share/shared-data \
  kp/keypair-sample; do
  "$KUBECTL" wait -n default --for=condition=Ready "$obj" --timeout=300s >/dev/null \
    || log "WARNING: $obj not Ready yet (see: $KUBECTL describe $obj)"
done
"$KUBECTL" get -n default kumo

cat <<MSG

Kumo is running against a local Kubernetes API and a local OpenStack:
  export KUBECONFIG=$KUBECONFIG
  alias kubectl=$KUBECTL        # the kubectl built with the API server (same release)
  kubectl get kumo
  kubectl scale vmg virtualmachinegroup-sample --replicas=3
  export OS_CLIENT_CONFIG_FILE=$KUMO_STATE/clouds.yaml
  openstack --os-cloud kumo-demo server list
Prometheus: $(bash dev/prometheus.sh url)   (up{job="kumo"}, the alerts: docs/operations.md)
Logs: $KUMO_STATE/logs/   Stop everything: make down
MSG
