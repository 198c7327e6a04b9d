"""The Octavia cost bench's arithmetic: the batch/single ratio and its table."""

from __future__ import annotations

from bench.octavia_cost import Cost, singles_per_batch, table


def cost(what: str, members: int, cpu: float, size: int = 100) -> Cost:
    return Cost(100, size, what, members, 1.0, {"octavia-worker": cpu * 0.75, "mariadb": cpu / 4})


def test_a_batch_is_worth_as_many_singles_as_its_cpu_over_one_singles() -> None:
    assert singles_per_batch(cost("batch", 1, 6.0), cost("singles", 5, 4.0)) == 7.5


def test_no_singles_measured_is_no_ratio_rather_than_a_division_by_zero() -> None:
    assert singles_per_batch(cost("batch", 1, 6.0), cost("singles", 0, 0.0)) == float("inf")


def test_the_table_gives_each_rounds_ratio_and_every_service() -> None:
    text = table(
        [
            cost("fill", 100, 7.0, size=0),
            cost("batch", 1, 6.0),
            cost("batch", 5, 6.5, size=101),
            cost("singles", 5, 4.0, size=106),
        ]
    )
    assert "octavia-worker CPU-s" in text and "mariadb CPU-s" in text
    assert "pool of 100: one batch costs the CPU of 7.5 single creates" in text
    assert text.count("\n") == 1 + 4 + 1  # header, rule, four rows, the ratio
