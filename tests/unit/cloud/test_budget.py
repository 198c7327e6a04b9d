"""BuildBudget: turns to create servers, first come first served, with lapses."""

from __future__ import annotations

from kumo.cloud.budget import BuildBudget


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_no_limit_admits_everyone_and_queues_nobody() -> None:
    budget = BuildBudget(0, Clock())
    assert all(budget.admit(f"vm-{i}", queued=10_000) for i in range(100))
    assert budget.waiting == 0
    assert budget.release(queued=0) == []


def test_admits_up_to_the_limit_counting_creates_in_flight() -> None:
    budget = BuildBudget(3, Clock())
    assert budget.admit("a", queued=1)
    assert budget.admit("b", queued=1)  # a's create has not returned: 1 + 1 reserved
    assert not budget.admit("c", queued=1)
    assert budget.waiting == 1
    budget.created("a")  # a's server is in the cache now: 2 queued, b reserved
    assert not budget.admit("c", queued=2)
    assert budget.admit("b", queued=2), "a VM holding a turn keeps it when it asks again"


def test_waiters_go_first_come_first_served_and_newcomers_queue_behind() -> None:
    budget = BuildBudget(2, Clock())
    for uid in ("w1", "w2", "w3"):
        assert not budget.admit(uid, queued=2)
    assert budget.release(queued=1) == ["w1"], "one server reached a host: the first waiter's turn"
    assert not budget.admit("late", queued=1), "a newcomer does not jump the queue"
    assert not budget.admit("w2", queued=1), "nor does the second waiter"
    assert budget.admit("w1", queued=1)
    budget.created("w1")
    assert budget.release(queued=0) == ["w2", "w3"]
    assert budget.admit("w3", queued=0) and budget.admit("w2", queued=0)
    assert budget.release(queued=2) == [], "the budget is spent: nobody else is woken"
    assert budget.waiting == 1  # "late"


def test_asking_again_keeps_a_waiters_place() -> None:
    budget = BuildBudget(1, Clock())
    assert not budget.admit("first", queued=1)
    assert not budget.admit("second", queued=1)
    assert not budget.admit("first", queued=1)
    assert budget.release(queued=0) == ["first"]


def test_a_turn_never_used_and_a_waiter_that_stopped_asking_lapse() -> None:
    clock = Clock()
    budget = BuildBudget(1, clock, hold=100.0)
    assert budget.admit("adopted-instead", queued=0)  # its create never comes
    assert not budget.admit("gone", queued=0)  # its object is deleted while it waits
    assert not budget.admit("next", queued=0)
    clock.now = 50.0
    assert not budget.admit("next", queued=0)  # still within the hold
    clock.now = 101.0
    assert budget.release(queued=0) == ["next"], "both lapsed; next asked at 50 s"
    assert budget.admit("next", queued=0)


def test_a_withdrawn_waiter_lets_those_behind_it_move_up_at_once() -> None:
    budget = BuildBudget(1, Clock())
    assert not budget.admit("deleted", queued=1)
    assert not budget.admit("next", queued=1)
    budget.withdraw("deleted")
    assert budget.release(queued=0) == ["next"]
    assert budget.admit("next", queued=0)


def test_lapses_are_found_when_due_though_most_asks_scan_nothing() -> None:
    """Waiters that ask again move their lapse later; the earliest one recorded is only
    a bound: a scan at it finds what is due and nothing that is not."""
    clock = Clock()
    budget = BuildBudget(1, clock, hold=100.0)
    assert not budget.admit("a", queued=1)
    clock.now = 10.0
    assert not budget.admit("b", queued=1)
    clock.now = 60.0
    assert not budget.admit("a", queued=1)  # a asks again: lapses at 160 now
    clock.now = 105.0
    assert budget.release(queued=1) == [] and budget.waiting == 2, "nothing lapsed yet"
    clock.now = 111.0
    assert budget.waiting == 2 and budget.release(queued=0) == ["a"], "b lapsed at 110"
    clock.now = 161.0
    assert budget.release(queued=0) == [] and budget.waiting == 0
