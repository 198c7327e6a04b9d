"""runtime/periodic.follow: the leader's follow loops (ConfigMaps, import namespaces)."""

from __future__ import annotations

import asyncio

import pytest

from kumo.engine.objects import Key
from kumo.runtime import periodic

VM = Key("VirtualMachine", "team-a", "web")
KP = Key("KeyPair", "team-a", "deploy")


def _run(at_once: bool, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What a loop did, in order, until its third wait: rounds, waits, keys enqueued."""
    did: list[object] = []
    answers = iter([[VM, KP], [], [KP]])

    async def round_() -> list[Key]:
        did.append("round")
        return next(answers)

    async def sleep(seconds: float) -> None:
        did.append(("wait", seconds))
        if did.count(("wait", seconds)) == 3:
            raise asyncio.CancelledError

    monkeypatch.setattr(periodic.asyncio, "sleep", sleep)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(periodic.follow(round_, did.append, 7.0, at_once=at_once))
    return did


def test_the_first_round_comes_at_once_and_each_key_is_enqueued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ConfigMap follower's: its first round sets the baselines."""
    assert _run(True, monkeypatch) == [
        "round", VM, KP, ("wait", 7.0), "round", ("wait", 7.0), "round", KP, ("wait", 7.0),
    ]  # fmt: skip


def test_a_loop_may_wait_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import gate's: nothing refused before a pass asked."""
    assert _run(False, monkeypatch) == [
        ("wait", 7.0), "round", VM, KP, ("wait", 7.0), "round", ("wait", 7.0),
    ]  # fmt: skip
