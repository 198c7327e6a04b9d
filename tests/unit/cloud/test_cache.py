"""ResourceCache: listings vs Kumo's own writes, gone vs unknown."""

from __future__ import annotations

import random
from dataclasses import replace

from kumo.cloud.cache import GONE, Change, ResourceCache
from kumo.cloud.model import Server, marker_tags, owner_of


def server(sid: str, owner: str = "uid-a", status: str = "ACTIVE") -> Server:
    return Server(id=sid, name=sid, status=status, tags=marker_tags(owner))


def cache() -> ResourceCache[Server]:
    return ResourceCache("servers", lambda s: s.id, lambda s: owner_of(s.tags))


def test_a_listing_reports_what_appeared_changed_and_went() -> None:
    c = cache()
    assert c.replace(c.begin(), [server("s1"), server("s2")]) == [
        Change(None, server("s1")),
        Change(None, server("s2")),
    ]
    building = server("s1", status="BUILD")
    changes = c.replace(c.begin(), [building])
    assert changes == [Change(server("s1"), building), Change(server("s2"), None)]
    assert c.lookup("s1") == building
    assert c.lookup("s2") is GONE, "absent from a complete listing: gone"
    assert c.lookup("never-seen") is None, "unknown: the caller asks the API"
    assert c.replace(c.begin(), [building]) == [], "nothing changed, nothing reported"


def test_a_listing_begun_before_a_write_neither_removes_nor_overwrites_it() -> None:
    c = cache()
    c.replace(c.begin(), [server("s1")])
    token = c.begin()  # the listing is on its way...
    c.put(server("new", status="BUILD"))  # ...while Kumo creates a server
    c.update("s1", lambda s: replace(s, description="fixed"))
    changes = c.replace(token, [server("s1")])  # the listing knows neither
    assert changes == []
    assert c.lookup("new") == server("new", status="BUILD"), "not taken for gone"
    assert c.lookup("s1").description == "fixed", "not overwritten by the older view"  # type: ignore[union-attr]
    later = c.begin()
    assert c.replace(later, [server("s1")]) == [
        Change(replace(server("s1"), description="fixed"), server("s1")),
        Change(server("new", status="BUILD"), None),
    ], "a listing begun after the writes is believed"


def test_a_listing_of_one_scope_leaves_the_rest_alone() -> None:
    c = cache()
    c.replace(c.begin(), [server("s1", owner="a"), server("s2", owner="b")])
    changes = c.replace(c.begin(), [], scope=lambda s: owner_of(s.tags) == "a")
    assert changes == [Change(server("s1", owner="a"), None)]
    assert c.lookup("s2") == server("s2", owner="b")


def test_incremental_changes_and_deletions() -> None:
    c = cache()
    c.replace(c.begin(), [server("s1"), server("s2")])
    changes = c.apply(c.begin(), [server("s1", status="ERROR")], deleted=["s2", "s3"])
    assert changes == [
        Change(server("s1"), server("s1", status="ERROR")),
        Change(server("s2"), None),
    ]
    assert c.lookup("s3") is GONE, "a deletion the cache never saw still counts"
    c.forget("s1")
    assert c.lookup("s1") is GONE


def test_owners_and_live_counts() -> None:
    c = ResourceCache(
        "servers",
        lambda s: s.id,
        lambda s: owner_of(s.tags),
        live=lambda s: s.status != "DELETING",
    )
    c.replace(c.begin(), [server("s1"), server("s2", status="DELETING"), server("s3", "b")])
    assert [s.id for s in c.owned_by("uid-a")] == ["s1", "s2"]
    assert c.live_count("uid-a") == 1, "one on its way out is no duplicate"
    c.put(server("s4"))
    assert c.live_count("uid-a") == 2


def test_a_scope_in_doubt_is_settled_only_by_a_listing_of_it_begun_after_the_doubt() -> None:
    c = cache()
    c.replace(c.begin(), [server("s1")])
    early = c.begin()  # a listing of uid-a already on its way...
    c.doubt("uid-a")  # ...when a create for uid-a lost its answer
    assert c.in_doubt("uid-a") and not c.in_doubt("uid-b")
    c.relisted(early, "uid-a", [server("s1")])
    assert c.in_doubt("uid-a"), "that listing may have missed the create"
    c.replace(c.begin(), [server("s1")])
    assert c.in_doubt("uid-a"), "the watch's listings do not settle it: the reader lists"
    token = c.begin()
    changes = c.relisted(token, "uid-a", [server("s1"), server("lost-answer")])
    assert not c.in_doubt("uid-a")
    assert changes == [Change(None, server("lost-answer"))]
    assert [s.id for s in c.owned_by("uid-a")] == ["s1", "lost-answer"]


def test_a_reader_s_listing_removes_nothing() -> None:
    c = cache()
    c.replace(c.begin(), [server("s1"), server("s2")])
    c.doubt("uid-a")
    c.relisted(c.begin(), "uid-a", [server("s1")])
    assert c.lookup("s2") == server("s2"), "absence is for the watch's complete listings"


def test_owned_by_is_indexed_and_agrees_with_a_scan_through_every_kind_of_change() -> None:
    """``owned_by`` answers from an index (a scan per pass made a fleet's passes O(N²));
    whatever writes, listings and deletions happen, it must say what a scan says."""
    rng = random.Random(24)
    c = cache()
    owners = ["uid-a", "uid-b", "uid-c", "foreign"]
    for step in range(2000):
        sid = f"s{rng.randrange(30)}"
        owner = rng.choice(owners)
        op = rng.randrange(6)
        if op == 0:
            c.put(server(sid, owner))
        elif op == 1:
            c.forget(sid)
        elif op == 2:
            c.update(sid, lambda s, o=owner: replace(s, tags=marker_tags(o)))  # type: ignore[misc]
        elif op == 3:
            listed = [server(f"s{i}", rng.choice(owners)) for i in rng.sample(range(30), 10)]
            c.replace(c.begin(), listed)
        elif op == 4:
            c.apply(c.begin(), [server(sid, owner)], deleted=[f"s{rng.randrange(30)}"])
        else:
            c.relisted(c.begin(), owner, [server(sid, owner)])
        for uid in owners:
            scan = [s for s in c.items() if owner_of(s.tags) == uid]
            assert sorted(s.id for s in c.owned_by(uid)) == sorted(s.id for s in scan), step
            assert all(owner_of(s.tags) == uid for s in c.owned_by(uid))
