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


def test_per_body_derives_once_per_body_and_keeps_the_latest_of_each_aggregate() -> None:
    from kumo.kinds.derived import PerBody

    index = PerBody(lambda b: {m: i for i, m in enumerate(b["status"]["members"])}, size=2)

    def lb(uid: str, members: list[str]) -> dict[str, Any]:
        return {"metadata": {"uid": uid, "name": uid}, "status": {"members": members}}

    a, b, c = lb("a", ["x", "y"]), lb("b", ["y"]), lb("c", ["z"])
    assert index(a)["y"] == 1 and index(a)["x"] == 0 and index.derived == 1
    assert index(b) == {"y": 0} and index(a) == {"x": 0, "y": 1} and index.derived == 2
    index(c)  # a is the most recently asked of a, b: b goes
    assert index.derived == 3 and index(a)["x"] == 0 and index.derived == 3
    assert index(b) == {"y": 0} and index.derived == 4
    a["status"] = {"members": ["w"]}  # replaced in place: seen as a change
    assert index(a) == {"w": 0} and index.derived == 5
    newer = lb("a", ["v"])  # the cache replaced a's body: its new status
    assert index(newer) == {"v": 0} and index.derived == 6
    held = [entry[0] for entry in index._seen.values()]
    assert newer in held and not any(body is a for body in held), (
        "one entry per aggregate: the superseded body is not kept"
    )
    assert len(index._seen) == 2


def test_load_balancer_members_by_vm_name_match_a_scan() -> None:
    from kumo.kinds import ordering

    members = [{"name": f"m{i}", "address": f"10.0.0.{i}", "weight": 1} for i in range(50)]
    lb = {
        "metadata": {"name": "lb"},
        "status": {
            "ports": [{"port": 80, "members": members}, {"port": 81, "members": members[:3]}]
        },
    }
    for name in ("m1", "m7", "nobody"):
        scan = tuple(
            (p["port"], m) for p in lb["status"]["ports"] for m in p["members"] if m["name"] == name
        )
        assert ordering.listed_members(lb, name) == scan
