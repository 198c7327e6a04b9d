"""The kill -9 run's seeded step planner: replayable, within bounds, covering every action."""

from __future__ import annotations

import pytest

from tests.chaos.plan import ACTIONS, Step, chaos_seed, env_int, final_replicas, plan_steps


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    assert plan_steps(1234, 5) == plan_steps(1234, 5)
    assert plan_steps(1234, 5) != plan_steps(4321, 5)


@pytest.mark.parametrize("kills", [0, 1, 5, 100])
def test_exactly_the_asked_number_of_kills_each_after_one_to_three_actions(kills: int) -> None:
    steps = plan_steps(99, kills)
    assert sum(s.action == "kill" for s in steps) == kills
    run = 0
    for step in steps:
        if step.action == "kill":
            assert 1 <= run <= 3, steps
            assert 0.0 <= step.delay <= 6.0
            run = 0
        else:
            run += 1
    assert steps[-1].action == ("kill" if kills else steps[-1].action)


@pytest.mark.parametrize("seed", range(50))
def test_replicas_stay_within_bounds_and_always_change(seed: int) -> None:
    steps = plan_steps(seed, 8, initial_replicas=2, replicas=(1, 6))
    current = 2
    for step in steps:
        if step.action == "scale":
            assert 1 <= step.value <= 6 and step.value != current
            current = step.value
    assert final_replicas(steps, 2) == current


@pytest.mark.parametrize("seed", range(50))
def test_every_action_occurs_when_there_is_room(seed: int) -> None:
    steps = plan_steps(seed, 2)
    actions = [s.action for s in steps if s.action != "kill"]
    if len(actions) >= len(ACTIONS):
        assert set(actions) == set(ACTIONS)


def test_template_revisions_count_up() -> None:
    revisions = [s.value for s in plan_steps(7, 40) if s.action == "template"]
    assert revisions == list(range(1, len(revisions) + 1)) and revisions


def test_final_replicas_without_scaling_is_the_initial_count() -> None:
    assert final_replicas([Step("template", 1), Step("kill", delay=1.0)], 2) == 2


def test_describe_is_readable() -> None:
    assert Step("kill", delay=2.25).describe() == "kill after 2.2s"
    assert Step("scale", 4).describe() == "scale 4"


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        plan_steps(1, -1)
    with pytest.raises(ValueError):
        plan_steps(1, 1, replicas=(3, 3))


def test_seed_and_counts_from_the_environment() -> None:
    assert chaos_seed({"KUMO_CHAOS_SEED": "1234"}) == 1234
    assert 1 <= chaos_seed({}) < 2**31
    assert env_int("KUMO_CHAOS_KILLS", 5, {}) == 5
    assert env_int("KUMO_CHAOS_KILLS", 5, {"KUMO_CHAOS_KILLS": "100"}) == 100
