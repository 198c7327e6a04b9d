"""Fault injection: the operator talks to OpenStack through a proxy that fails 20 % of
the requests with a 5xx, some with 429 + Retry-After, resets connections (some after
the upstream carried the request out: a create whose answer is lost) and slows answers
down by 1-3 s, and loses the answer of the first create of a network, a router and a
security group (``lose_first``) — and still nothing leaks and nothing is duplicated.

The test owns its operator (the session's is stopped meanwhile): it runs with a
clouds.yaml entry ``kumo-chaos``, a copy of the lab's ``kumo-demo`` whose compute,
network, image, load-balancer and dns endpoints point at the proxy
(``tests/chaos/routing.py``); Keystone stays direct. The group is scaled at random
within 1..6 for ``KUMO_CHAOS_FAULT_SECONDS`` (default 60) under faults; then the faults
stop and the stack must settle and pass the same end-state checks as the kill -9 run.
The checks read the cloud through a direct connection, never through the proxy.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chaos import stack
from tests.chaos.faultproxy import LOSE_FIRST_CREATES, FaultConfig, FaultProxyThread
from tests.chaos.plan import chaos_seed, env_int
from tests.chaos.routing import SERVICES, proxied_entry, service_endpoints, upstream_of
from tests.integration.openstack_fixtures import lab_connect
from tests.integration.polling import wait_until

CLOUD = "kumo-chaos"
FAULTS = FaultConfig(
    error_5xx=0.20,
    too_many=0.05,
    reset=0.05,
    latency=0.10,
    latency_range=(1.0, 3.0),
    retry_after=1,
    lost_response=0.3,
    lose_first=LOSE_FIRST_CREATES,  # a network's, router's, group's first create: adopted
)
FAULT_SECONDS = env_int("KUMO_CHAOS_FAULT_SECONDS", 60)
SEED = chaos_seed()
TIMEOUT = 1500 + 2 * FAULT_SECONDS


@pytest.fixture
def endpoints(demo_conn: Any) -> dict[str, str]:
    """Service type → the versioned base URL a direct kumo-demo connection uses."""
    return service_endpoints(demo_conn)


@pytest.fixture
def fault_proxy(endpoints: dict[str, str]) -> Iterator[FaultProxyThread]:
    """A proxy in front of every service the operator calls, faults off to begin with."""
    proxy = FaultProxyThread(
        {svc: upstream_of(url) for svc, url in endpoints.items()},
        seed=SEED,
        lifetime=TIMEOUT + 300,  # stops by itself even if this test is torn down badly
    )
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture
def proxied_clouds_yaml(
    openstack_lab: str, endpoints: dict[str, str], fault_proxy: FaultProxyThread, tmp_path: Path
) -> Path:
    """clouds.yaml with one entry, kumo-demo's credentials, services through the proxy."""
    lab = yaml.safe_load(Path(openstack_lab).read_text())
    entry = proxied_entry(lab["clouds"]["kumo-demo"], endpoints, fault_proxy.urls)
    path = tmp_path / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {CLOUD: entry}}))
    path.chmod(0o600)
    return path


def _check_routing(clouds_yaml: Path, proxy: FaultProxyThread) -> None:
    """Every service answers through the proxy (faults still off)."""
    conn = lab_connect(clouds_yaml, CLOUD)
    try:
        assert conn.image.find_image("centos79") is not None
        assert conn.compute.find_flavor("m1.tiny") is not None
        assert conn.network.find_network("kumo-demo-net") is not None
        list(conn.load_balancer.load_balancers())
        assert conn.dns.find_zone(stack.ZONE) is not None
    finally:
        conn.close()
    # API calls, not just version documents: a service whose discovery led the SDK
    # past the proxy would show requests here but no calls.
    unrouted = [svc for svc in SERVICES if proxy.calls_of(svc) == 0]
    assert not unrouted, f"API calls not going through the proxy: {unrouted}"


@pytest.mark.timeout(TIMEOUT)
def test_fault_injection(
    namespace: str,
    fault_proxy: FaultProxyThread,
    proxied_clouds_yaml: Path,
    own_operator: stack.OperatorFactory,  # after the proxy: stopped before it on teardown
    demo_conn: Any,
) -> None:
    _check_routing(proxied_clouds_yaml, fault_proxy)
    run = stack.Run("faults", SEED)
    before = stack.snapshot_orphans(demo_conn)
    owners: set[str] = set()
    rng = random.Random(SEED)

    fault_proxy.configure(FAULTS)
    operator = own_operator(str(proxied_clouds_yaml), CLOUD, "operator-faults.log")
    operator.wait_role("leader", 90)
    replicas = 2
    stack.apply_stack(namespace, replicas)
    deadline = time.monotonic() + FAULT_SECONDS
    rounds = 0
    while rounds < 2 or time.monotonic() < deadline:
        replicas = rng.choice([n for n in range(1, 7) if n != replicas])
        stack.scale(namespace, replicas)
        _churn_for_a_while(namespace, replicas, fault_proxy)
        stack.seen_owners(namespace, owners)
        rounds += 1
    run.faults = fault_proxy.snapshot()
    fault_proxy.configure(FaultConfig())  # the cloud heals; Kumo must converge by itself
    run.extra.update(rounds=rounds, replicas=replicas)

    state = run.settle(demo_conn, namespace, replicas)
    stack.seen_owners(namespace, owners)
    verdict = stack.judge(demo_conn, state, before)
    remains = stack.delete_and_check(demo_conn, namespace, owners | state.owners, verdict)
    run.extra["requests"] = fault_proxy.requests
    leaks = run.finish(verdict, remains)

    assert operator.proc is not None and operator.proc.poll() is None, "the operator died"
    for kind in ("5xx", "429", "reset", "latency"):
        assert run.faults[kind] > 0, f"no {kind} fault was injected: the run proved nothing"
    assert not verdict.problems, "\n".join(verdict.problems)
    assert leaks == 0 and verdict.duplicates == 0


def _churn_for_a_while(namespace: str, replicas: int, proxy: FaultProxyThread) -> None:
    """Let the faulted operator work on the new target: until the group lists that many
    members and ~40 more requests went through the proxy, or 45 s, whichever is first.
    Not reaching it is fine: the next round changes the target anyway."""
    start = proxy.requests

    def moving() -> bool:
        vms = [v for v in stack.group_vms(namespace) if not v["metadata"].get("deletionTimestamp")]
        return len(vms) == replicas and proxy.requests - start >= 40

    with contextlib.suppress(AssertionError):
        wait_until(f"the operator working on {replicas} replicas", moving, 45, interval=1)
