"""Pure VirtualMachine decisions: how long a server in ERROR waits before replacement."""

from __future__ import annotations

import pytest

from kumo.cloud.model import Server
from kumo.kinds.virtualmachine import plan


def test_replacement_delay_doubles_and_is_capped() -> None:
    delays = [plan.replacement_delay(n) for n in range(8)]
    assert delays[:4] == [60.0, 120.0, 240.0, 480.0]
    assert max(delays) == plan.REPLACEMENT_CAP_SECONDS
    assert plan.replacement_delay(100_000) == plan.REPLACEMENT_CAP_SECONDS  # no overflow


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (44.2, "45s"), (60, "1m"), (239.5, "4m"), (5400, "1h30m")]
)
def test_durations_read_like_kubectl(seconds: float, text: str) -> None:
    assert plan.duration(seconds) == text


def test_replacement_note_names_a_time_not_a_countdown() -> None:
    since = "2026-11-27T10:00:00Z"
    assert plan.replacement_note(0, since, 45) == (
        "replacing it at 2026-11-27T10:00:45Z, 45s after it was reported"
    )
    assert plan.replacement_note(1, since, 120) == (
        "replaced 1 time, next attempt at 2026-11-27T10:02:00Z, 2m after the last"
    )
    assert plan.replacement_note(3, "2026-11-27T23:58:00Z", 240.5) == (
        "replaced 3 times, next attempt at 2026-11-28T00:02:01Z, 5m after the last"
    )


@pytest.mark.parametrize(
    ("hash_on_server", "status", "why"),
    [
        ("old", "ACTIVE", "spec"),
        ("old", "DELETING", "spec"),  # a changed spec goes first, as before the lifecycle
        ("old", "ERROR", "spec"),
        ("h", "DELETING", "deleting"),
        ("h", "ERROR", "error"),
        (None, "ERROR", "error"),  # no hash (imported): never a spec replacement
        ("h", "BUILD", None),
        ("h", "SHUTOFF", None),
    ],
)
def test_replacement_reasons_in_their_order(
    hash_on_server: str | None, status: str, why: str | None
) -> None:
    metadata = {plan.HASH_KEY: hash_on_server} if hash_on_server else {}
    server = Server(id="s", name="vm", status=status, metadata=metadata)
    assert plan.replacement(server, "h") == why
