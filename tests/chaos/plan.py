"""The kill -9 chaos run's script: a seeded random sequence of steps, decided up front.

Why a plan: a chaos failure is only worth something if it can be replayed. The whole
sequence — which scale targets, which template revisions, which member's server goes,
how long after the operator took the lead each SIGKILL lands — comes from one seed
(printed by the test; set ``KUMO_CHAOS_SEED`` to replay it). What the steps meet in the
lab (which member exists when) is not deterministic, so a ``delete_server`` step names
a pick, not a server: the executor takes ``members[pick % len(members)]``.

Shape: ``rounds = max(kills, 1)``; each round is 1-3 actions followed by a kill (the
last round of a run without kills has none). Every kind of action occurs at least once
when there are three actions or more.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Action = Literal["scale", "template", "delete_server", "kill"]
ACTIONS: tuple[Action, ...] = ("scale", "template", "delete_server")
#: Template changes roll every member over (maxSurge 1): keep them the rarer action.
WEIGHTS = (0.45, 0.2, 0.35)
PICKS = 1000


@dataclass(frozen=True)
class Step:
    action: Action
    #: scale: the replicas; template: the revision; delete_server: the member pick.
    value: int = 0
    #: kill: seconds to let the new leader work before the SIGKILL (the random moment).
    delay: float = 0.0

    def describe(self) -> str:
        if self.action == "kill":
            return f"kill after {self.delay:.1f}s"
        return f"{self.action} {self.value}"


def chaos_seed(env: Mapping[str, str] = os.environ) -> int:
    """``KUMO_CHAOS_SEED`` if set, else a fresh random seed (to be printed)."""
    given = env.get("KUMO_CHAOS_SEED", "").strip()
    return int(given) if given else random.SystemRandom().randrange(1, 2**31)


def env_int(name: str, default: int, env: Mapping[str, str] = os.environ) -> int:
    given = env.get(name, "").strip()
    return int(given) if given else default


def plan_steps(
    seed: int,
    kills: int,
    *,
    initial_replicas: int = 2,
    replicas: tuple[int, int] = (1, 6),
    actions_per_kill: tuple[int, int] = (1, 3),
    max_delay: float = 6.0,
) -> list[Step]:
    """The steps of one run; the same arguments always give the same steps."""
    if kills < 0:
        raise ValueError("kills must be >= 0")
    low, high = replicas
    if not 1 <= low < high:
        raise ValueError("replicas must be a range of at least two values, from 1")
    rng = random.Random(seed)
    rounds = max(kills, 1)

    # First the kinds of action per round, so coverage can be fixed before values exist.
    shape: list[list[Action]] = [
        rng.choices(ACTIONS, WEIGHTS, k=rng.randint(*actions_per_kill)) for _ in range(rounds)
    ]
    flat = [(r, i) for r, kinds in enumerate(shape) for i in range(len(kinds))]
    if len(flat) >= len(ACTIONS):
        for missing in [a for a in ACTIONS if all(a not in kinds for kinds in shape)]:
            counts = {a: sum(k.count(a) for k in shape) for a in ACTIONS}
            spare = [(r, i) for r, i in flat if counts[shape[r][i]] > 1]
            r, i = rng.choice(spare)
            shape[r][i] = missing

    steps: list[Step] = []
    current, revision = initial_replicas, 0
    for number, kinds in enumerate(shape):
        for kind in kinds:
            if kind == "scale":
                current = rng.choice([n for n in range(low, high + 1) if n != current])
                steps.append(Step("scale", current))
            elif kind == "template":
                revision += 1
                steps.append(Step("template", revision))
            else:
                steps.append(Step("delete_server", rng.randrange(PICKS)))
        if number < kills:
            steps.append(Step("kill", delay=round(rng.uniform(0.0, max_delay), 1)))
    return steps


def final_replicas(steps: list[Step], initial: int) -> int:
    """The replicas the group must settle at: the last scale target, else ``initial``."""
    targets = [s.value for s in steps if s.action == "scale"]
    return targets[-1] if targets else initial
