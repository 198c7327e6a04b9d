"""kinds/duplicates.py: the memory of creates in doubt, and what makes a duplicate of
a volume or a share disposable (made in that window under Kumo's name, holding nothing).
The ownership routine's use of it: tests/unit/kinds/volume/test_duplicates.py."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from kumo.engine.errors import TerminalError, TransientError
from kumo.kinds import duplicates
from kumo.ports import model
from tests.unit.fakes.sharedfs import FakeSharedFS

UID = "uid-data"
NAME = "default-data"
START = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


def in_doubt(creates: duplicates.Creates) -> None:
    async def lost() -> None:
        raise TimeoutError("the answer never came")

    with contextlib.suppress(TimeoutError):
        asyncio.run(creates.run(UID, NAME, lost))


def ticking() -> duplicates.Creates:
    clock = iter([START, START + timedelta(seconds=5), START + timedelta(seconds=6)])
    return duplicates.Creates(now=lambda: next(clock))


def test_the_window_is_the_create_s_own_give_or_take_the_clock_margin() -> None:
    creates = ticking()
    in_doubt(creates)
    assert creates.made(UID, NAME, "2026-11-28T10:00:03.000000") is not None
    assert creates.made(UID, NAME, "2026-11-28T09:59:40Z") is not None, "the clocks' margin"
    assert creates.made(UID, NAME, "2026-11-28T10:01:00") is None, "made after the window"
    assert creates.made(UID, "another-name", "2026-11-28T10:00:03") is None
    assert creates.made("uid-other", NAME, "2026-11-28T10:00:03") is None


def test_a_refused_create_is_no_window_and_a_failed_one_is() -> None:
    """Refused (the adapter's classifier marks a 4xx): nothing was made. A 5xx: maybe."""

    def window_after(error: Exception) -> duplicates.Window | None:
        creates = duplicates.Creates()

        async def create() -> None:
            raise error

        with contextlib.suppress(type(error)):
            asyncio.run(creates.run(UID, NAME, create))
        return creates.made(UID, NAME, datetime.now(UTC).isoformat())

    quota = TerminalError("QuotaExceeded", "create volume: quota", refused=True)
    assert window_after(quota) is None
    assert window_after(TransientError("CloudUnavailable", "create volume: 503")) is not None


def test_a_volume_is_disposable_only_when_made_then_and_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    creates = ticking()
    in_doubt(creates)
    monkeypatch.setattr(duplicates, "CREATES", creates)
    disposable = duplicates.volume_disposable(UID, NAME)
    made = model.Volume("v", NAME, "available", 1, created_at="2026-11-28T10:00:02")

    def check(volume: model.Volume) -> bool:
        return asyncio.run(disposable(volume))

    assert check(made)
    assert not check(dataclasses.replace(made, attachments=("server-1",), status="in-use"))
    assert not check(dataclasses.replace(made, source_volid="v0")), "a clone"
    assert not check(dataclasses.replace(made, name="restore_backup_1"))
    assert not check(dataclasses.replace(made, created_at="2026-11-28T11:00:00"))
    assert not check(dataclasses.replace(made, updated_at="2026-11-28T10:30:00")), "used since"


def test_a_share_is_disposable_only_when_made_then_and_nobody_got_access(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    creates = ticking()
    in_doubt(creates)
    monkeypatch.setattr(duplicates, "CREATES", creates)
    manila = FakeSharedFS()
    share = model.Share("s", NAME, "available", 1, "NFS", created_at="2026-11-28T10:00:02")
    manila.rules[share.id] = {}
    disposable = duplicates.share_disposable(UID, NAME, manila)  # type: ignore[arg-type]
    assert asyncio.run(disposable(share))
    assert not asyncio.run(disposable(dataclasses.replace(share, snapshot_id="snap-1")))
    manila.add_rule(share.id, "10.0.0.1")
    assert not asyncio.run(disposable(share)), "someone was given access"
