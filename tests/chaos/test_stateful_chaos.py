"""kill -9 chaos on a stateful group: through every phase of its life, no volume is lost,
duplicated or attached twice.

A VirtualMachineGroup with ``identity: Ordinal`` and a volume template
(``tests/chaos/stateful.py``) goes through six phases, the leading operator SIGKILLed
at a seeded random moment of each (``1 + KUMO_CHAOS_KILLS // 50`` times: once in the
short run, three times in ``make chaos``): created with 3 members; a member's server
deleted out of band (its replacement gets the same volume); a flavor change (a rolling
delete-then-create: each volume leaves its old server and goes to the new one);
scale 3→2 (ordinal 2's volume retained, detached); scale 2→3 (ordinal 2 gets it back);
deletion. After each phase converges, the real Cinder and Nova are audited
(``tests/chaos/audit.py``): every ordinal's volume ID is the one it first had, one
Cinder volume per name and per marker, none attached to two servers, one server per
member; at the end nothing carrying a marker of the test's objects is left.

Replay a run with ``KUMO_CHAOS_SEED=<seed>`` (printed in the summary line).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.chaos import stack, stateful
from tests.chaos.plan import chaos_seed, env_int
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, wait_until

SEED = chaos_seed()
KILLS_PER_PHASE = 1 + env_int("KUMO_CHAOS_KILLS", 5) // 50
#: A phase converges well within this (servers boot in 5-15 s; a rollout replaces 3).
PHASE_TIMEOUT = 300.0
TIMEOUT = 6 * (PHASE_TIMEOUT + 30 * KILLS_PER_PHASE) + 300


@pytest.mark.timeout(TIMEOUT)
def test_stateful_group_under_kills(
    namespace: str, session_leader: KumoOperator, demo_conn: Any
) -> None:
    ns, conn, operator = namespace, demo_conn, session_leader
    rng = random.Random(SEED)
    run = stack.Run("stateful", SEED, extra={"phases": 6})
    before = stack.snapshot_orphans(conn)
    owners: set[str] = set()
    problems: list[str] = []
    seconds: list[int] = []  # each phase's, kills included: reported with the figures

    def phase(
        what: str, act: Callable[[], None], max_delay: float, replicas: int, flavor: str,
        avoid: frozenset[str] = frozenset(),
    ) -> stateful.Converged:  # fmt: skip
        started = time.monotonic()
        act()
        for _ in range(KILLS_PER_PHASE):
            stack.seen_owners(ns, owners)
            stack.kill_at_work(operator, round(rng.uniform(0.0, max_delay), 1))
            run.kills += 1
        stack.ensure_leading(operator)
        try:
            state: stateful.Converged = wait_until(
                f"the stateful group converged after: {what}",
                lambda: stateful.converged(conn, ns, replicas, flavor, avoid=avoid),
                PHASE_TIMEOUT,
                interval=2,
            )
        except AssertionError:
            run.report("?", "?", settled=False, phase=what)
            raise
        seconds.append(round(time.monotonic() - started))
        stack.seen_owners(ns, owners)
        problems.extend(f"{what}: {p}" for p in stateful.audit(conn, ns, first, state))
        return state

    tiny, small = stateful.FLAVORS
    first: dict[str, str] = {}
    state = phase("create 3", lambda: stateful.create(ns, 3), 8.0, 3, tiny)
    first.update(state.volumes)  # every later phase is judged against these IDs

    victim = rng.randrange(3)
    old = state.servers[victim]
    state = phase(
        f"server of {stateful.member(victim)} deleted out of band",
        lambda: conn.compute.delete_server(old),
        6.0, 3, tiny, frozenset({old}),
    )  # fmt: skip
    olds = frozenset(state.servers.values())
    state = phase(
        f"flavor {tiny} -> {small} (rolling replacement)",
        lambda: stateful.patch(ns, {"template": {"flavor": small}}),
        20.0, 3, small, olds,
    )  # fmt: skip
    phase("scale 3 -> 2", lambda: stateful.patch(ns, {"replicas": 2}), 6.0, 2, small)
    phase("scale 2 -> 3", lambda: stateful.patch(ns, {"replicas": 3}), 8.0, 3, small)

    # Deletion: the group deletes its members, then its Volume objects (whenDeleted:
    # Delete), each of which deletes its Cinder volume; a kill lands in the middle.
    stack.seen_owners(ns, owners)
    started = time.monotonic()
    kubectl("delete", "vmg", stateful.GROUP, "-n", ns, "--wait=false")
    for _ in range(KILLS_PER_PHASE):
        stack.kill_at_work(operator, round(rng.uniform(0.0, 6.0), 1))
        run.kills += 1
    stack.ensure_leading(operator)
    wait_until(
        "every Kumo object of the namespace deleted",
        lambda: not stack.namespace_uids(ns),
        PHASE_TIMEOUT,
        interval=2,
    )
    remains = stack.wait_nothing_remains(conn, owners)
    seconds.append(round(time.monotonic() - started))
    problems += [f"left after deletion: {m.kind} {m.id} ({m.name})" for m in remains]
    names = {f"{ns}-{name}" for name in first}
    left = [v for v in stack.cinder_volumes(conn) if v.name in names]
    problems += [f"left after deletion: Cinder volume {v.id} ({v.name})" for v in left]
    leaks = stack.wait_for_leaks(conn, before)
    problems += [f"leaked {m.kind} {m.id} ({m.name}) of {m.owner}" for m in leaks]

    duplicates = sum("duplicate" in p or "servers for owner" in p for p in problems)
    lost = sum("lost volume" in p for p in problems)
    leaked = len({m.key for m in leaks} | {m.key for m in remains}) + len(left)
    run.report(leaked, duplicates, lost=lost, problems=len(problems), seconds=seconds)
    assert not problems, "\n".join(problems)
