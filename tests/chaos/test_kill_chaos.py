"""kill -9 chaos: the operator is SIGKILLed at random moments of a random churn, and
still nothing leaks and nothing is duplicated.

A VirtualMachineGroup, a LoadBalancer following it and a DNSRecord publishing its VIP
go through a seeded random sequence (``tests/chaos/plan.py``): scale within 1..6,
template changes (rolling replacement), a member's server deleted out of band, and
``KUMO_CHAOS_KILLS`` SIGKILLs of the leading operator, each a random 0-6 s after the
restarted one took the lease (so kills land in the middle of its work: creates whose ID
is not recorded yet, half-done pool updates, deletions under way). A hand-made server
named like a member, without Kumo's marker, lives beside them. Then the stack must
settle and be exactly right: one server per VirtualMachine (the recorded one), pool =
Ready members, DNS = VIP, no marker of a vanished object anywhere in the project, the
foreign server untouched; deleting it all leaves nothing carrying this test's markers.

Replay a run with ``KUMO_CHAOS_SEED=<seed>`` (printed in the summary line). Each kill
costs ~12-15 s: the restarted operator waits for the dead holder's lease to expire.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos import stack
from tests.chaos.plan import Step, chaos_seed, env_int, final_replicas, plan_steps
from tests.integration.kumo_fixtures import KumoOperator, wait_until

INITIAL_REPLICAS = 2
KILLS = env_int("KUMO_CHAOS_KILLS", 5)
SEED = chaos_seed()
#: Per kill: the lease (≤ 15 s), the random moment (≤ 6 s), the actions; plus settling.
TIMEOUT = 1200 + 40 * KILLS


@pytest.mark.timeout(TIMEOUT)
def test_kill_chaos(namespace: str, session_leader: KumoOperator, demo_conn: Any) -> None:
    operator = session_leader
    steps = plan_steps(SEED, KILLS, initial_replicas=INITIAL_REPLICAS)
    replicas = final_replicas(steps, INITIAL_REPLICAS)
    print(f"chaos seed={SEED} kills={KILLS}: " + ", ".join(s.describe() for s in steps))
    run = stack.Run("kill", SEED, extra={"steps": len(steps), "replicas": replicas})
    before = stack.snapshot_orphans(demo_conn)
    owners: set[str] = set()

    stack.apply_stack(namespace, INITIAL_REPLICAS)
    first = wait_until("a first member", lambda: stack.group_vms(namespace), 120)[0]
    foreign = stack.create_foreign_server(demo_conn, first["metadata"]["name"])
    try:
        for step in steps:
            stack.seen_owners(namespace, owners)
            run.kills += _run(step, namespace, operator, demo_conn)
        stack.ensure_leading(operator)

        state = run.settle(demo_conn, namespace, replicas)
        stack.seen_owners(namespace, owners)
        verdict = stack.judge(demo_conn, state, before)
        verdict.problems += stack.foreign_untouched(demo_conn, foreign)
        remains = stack.delete_and_check(demo_conn, namespace, owners | state.owners, verdict)
        verdict.problems += stack.foreign_untouched(demo_conn, foreign)
    finally:
        stack.delete_foreign_server(demo_conn, foreign)

    leaks = run.finish(verdict, remains)
    assert not verdict.problems, "\n".join(verdict.problems)
    assert leaks == 0 and verdict.duplicates == 0


def _run(step: Step, namespace: str, operator: KumoOperator, conn: Any) -> int:
    """Carry out one step; return 1 for a kill."""
    if step.action == "scale":
        stack.scale(namespace, step.value)
    elif step.action == "template":
        stack.change_template(namespace, step.value)
    elif step.action == "delete_server":
        members = sorted(
            (v for v in stack.group_vms(namespace) if (v.get("status") or {}).get("id")),
            key=lambda v: v["metadata"]["name"],
        )
        if members:
            victim = members[step.value % len(members)]
            conn.compute.delete_server(victim["status"]["id"], ignore_missing=True)
    else:
        stack.kill_at_work(operator, step.delay)
        return 1
    return 0
