"""Outages: nova-api, then the Kubernetes API, gone for ``KUMO_CHAOS_OUTAGE_SECONDS``
(default 30) in the middle of a scale-out — and the same operator process picks up
where it was, with nothing leaked and nothing duplicated.

The daemons are stopped and started again through the lab's own scripts
(``tests/chaos/outage.py``), so the lab is left as ``make up`` leaves it. Each test owns
its operator (the session's is stopped meanwhile) and asserts its PID never changes.

The Kubernetes-API test runs its operator with leader election, as deployed: a leader
that cannot renew its Lease for ``renew_deadline`` (7 s) stops writing and becomes a
standby (runtime/leader.py), and when the API is back the same process takes the Lease
again and carries on — the watches, the work queue, the status writes and the cloud side
survive the API going away and coming back, without a restart.

``test_outages_in_turn`` puts both outages in one stack's life (nova-api, then the
Kubernetes API), so the short chaos run of ``make test`` covers both for the price of
one stack; the two tests of one outage each are the long run's (``make chaos``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos import stack
from tests.chaos.outage import outage, start_kube_api, start_nova
from tests.chaos.plan import env_int
from tests.integration.kumo_fixtures import KumoOperator, wait_until

OUTAGE_SECONDS = env_int("KUMO_CHAOS_OUTAGE_SECONDS", 30)
TIMEOUT = 1500 + 2 * OUTAGE_SECONDS


def _scale_out_under_way(namespace: str, replicas: int) -> None:
    """The group has created its new members (their servers may not exist yet)."""
    wait_until(
        f"{replicas} members listed",
        lambda: len(stack.group_vms(namespace)) >= replicas,
        120,
        interval=0.5,
    )


def _same_process(operator: KumoOperator, pid: int) -> list[str]:
    if operator.proc is None or operator.proc.poll() is not None:
        code = None if operator.proc is None else operator.proc.returncode
        return [f"the operator (pid {pid}) exited ({code}): see {operator.log_path}"]
    if operator.proc.pid != pid:
        return [f"the operator was restarted: pid {pid} -> {operator.proc.pid}"]
    return []


def _survived(run: stack.Run, operator: KumoOperator, pid: int) -> None:
    """Fail at once (with the figures reported) if the outage ended the operator."""
    problems = _same_process(operator, pid)
    if problems:
        run.report("?", "?", pid_kept=False)
        pytest.fail(problems[0])


def _nova_outage(namespace: str, owners: set[str]) -> None:
    """nova-api goes away in the middle of a scale-out to 5; the group is scaled to 3
    while it is away."""
    stack.scale(namespace, 5)
    _scale_out_under_way(namespace, 5)
    stack.seen_owners(namespace, owners)
    with outage("nova-api", start_nova, OUTAGE_SECONDS):
        stack.scale(namespace, 3)  # churn while Nova is away
        stack.seen_owners(namespace, owners)


def _kube_outage(namespace: str, owners: set[str], demo_conn: Any, replicas: int) -> None:
    """The Kubernetes API goes away in the middle of a scale-out to ``replicas``; a
    member's server is deleted on the cloud side while it is away."""
    stack.scale(namespace, replicas)
    _scale_out_under_way(namespace, replicas)
    stack.seen_owners(namespace, owners)
    victims = [
        v["status"]["id"] for v in stack.group_vms(namespace) if (v.get("status") or {}).get("id")
    ]
    with outage("kube-apiserver", start_kube_api, OUTAGE_SECONDS):
        for server_id in victims[:1]:  # churn on the cloud side while Kubernetes is away
            demo_conn.compute.delete_server(server_id, ignore_missing=True)


def _judge_and_delete(
    run: stack.Run,
    operator: KumoOperator,
    pid: int,
    demo_conn: Any,
    namespace: str,
    owners: set[str],
    before: frozenset[tuple[str, str]],
    replicas: int,
) -> None:
    """Settle at ``replicas``, judge (no leak, no duplicate, no mismatch), delete the
    stack and check nothing is left; the operator must be the same process throughout."""
    state = run.settle(demo_conn, namespace, replicas)
    stack.seen_owners(namespace, owners)
    verdict = stack.judge(demo_conn, state, before)
    remains = stack.delete_and_check(demo_conn, namespace, owners | state.owners, verdict)
    verdict.problems += _same_process(operator, pid)
    run.extra["pid_kept"] = not _same_process(operator, pid)
    leaks = run.finish(verdict, remains)

    assert not verdict.problems, "\n".join(verdict.problems)
    assert leaks == 0 and verdict.duplicates == 0


def _leading_operator(
    own_operator: stack.OperatorFactory, lab: str, log: str
) -> tuple[KumoOperator, int]:
    operator = own_operator(lab, "kumo-demo", log)
    operator.wait_role("leader", 90)
    assert operator.proc is not None
    return operator, operator.proc.pid


@pytest.mark.timeout(TIMEOUT)
def test_nova_api_outage(
    namespace: str, own_operator: stack.OperatorFactory, openstack_lab: str, demo_conn: Any
) -> None:
    operator, pid = _leading_operator(own_operator, openstack_lab, "operator-nova-outage.log")
    run = stack.Run("nova_api_outage", 0, faults={"nova-api-down-s": OUTAGE_SECONDS})
    before = stack.snapshot_orphans(demo_conn)
    owners: set[str] = set()

    stack.apply_stack(namespace, 2)
    stack.wait_settled(demo_conn, namespace, 2)
    _nova_outage(namespace, owners)
    _survived(run, operator, pid)
    _judge_and_delete(run, operator, pid, demo_conn, namespace, owners, before, 3)


@pytest.mark.timeout(TIMEOUT)
def test_kube_api_outage(
    namespace: str, own_operator: stack.OperatorFactory, openstack_lab: str, demo_conn: Any
) -> None:
    operator, pid = _leading_operator(own_operator, openstack_lab, "operator-kube-outage.log")
    run = stack.Run("kube_api_outage", 0, faults={"kube-apiserver-down-s": OUTAGE_SECONDS})
    before = stack.snapshot_orphans(demo_conn)
    owners: set[str] = set()

    stack.apply_stack(namespace, 2)
    stack.wait_settled(demo_conn, namespace, 2)
    _kube_outage(namespace, owners, demo_conn, 5)
    _survived(run, operator, pid)
    operator.wait_role("leader", 60)  # the same process leads again

    stack.scale(namespace, 3)  # and a change right after it is back
    _judge_and_delete(run, operator, pid, demo_conn, namespace, owners, before, 3)


@pytest.mark.timeout(TIMEOUT + OUTAGE_SECONDS)
def test_outages_in_turn(
    namespace: str, own_operator: stack.OperatorFactory, openstack_lab: str, demo_conn: Any
) -> None:
    """Both outages in one stack's life: nova-api, then the Kubernetes API."""
    operator, pid = _leading_operator(own_operator, openstack_lab, "operator-outages.log")
    run = stack.Run(
        "outages_in_turn",
        0,
        faults={"nova-api-down-s": OUTAGE_SECONDS, "kube-apiserver-down-s": OUTAGE_SECONDS},
    )
    before = stack.snapshot_orphans(demo_conn)
    owners: set[str] = set()

    stack.apply_stack(namespace, 2)
    stack.wait_settled(demo_conn, namespace, 2)
    _nova_outage(namespace, owners)
    _survived(run, operator, pid)
    stack.wait_settled(demo_conn, namespace, 3)
    _kube_outage(namespace, owners, demo_conn, 4)
    _survived(run, operator, pid)
    operator.wait_role("leader", 60)  # the same process leads again

    stack.scale(namespace, 3)  # and a change right after it is back
    _judge_and_delete(run, operator, pid, demo_conn, namespace, owners, before, 3)
