"""kinds/derived.py: what an aggregate derives per member, again only from a changed body."""

from __future__ import annotations

from typing import Any

from kumo.kinds.derived import Derived


def body(name: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {}, "status": {"ready": ready}}


def test_only_bodies_not_seen_last_pass_are_derived_again() -> None:
    calls: list[str] = []

    def derive(b: dict[str, Any]) -> tuple[str, bool]:
        calls.append(b["metadata"]["name"])
        return b["metadata"]["name"], b["status"]["ready"]

    memo = Derived(derive)
    bodies = [body(f"m{i}", False) for i in range(5)]
    assert memo.of("g", bodies) == [(f"m{i}", False) for i in range(5)]
    assert len(calls) == 5
    calls.clear()
    bodies[2] = body("m2", True)  # the cache replaced one member's body (a watch event)
    assert memo.of("g", bodies)[2] == ("m2", True)
    assert calls == ["m2"], "the other members are not parsed again"
    calls.clear()
    bodies[3]["status"] = {"ready": True}  # its status replaced in place: a change too
    assert memo.of("g", bodies)[3] == ("m3", True) and calls == ["m3"]


def test_scopes_are_apart_and_members_that_left_are_forgotten() -> None:
    memo = Derived(lambda b: b["metadata"]["name"])
    bodies = [body(f"m{i}", False) for i in range(3)]
    memo.of("g", bodies)
    memo.of("h", bodies[:1])
    assert memo.derived == 4, "another aggregate's cache is its own"
    memo.of("g", bodies[1:])
    assert len(memo._seen["g"]) == 2, "m0 left g: forgotten"
    memo.forget("g")
    assert memo.of("g", bodies) == ["m0", "m1", "m2"] and memo.derived == 7
