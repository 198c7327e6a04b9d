"""The chaos verdict as pure functions: what is a leak, a duplicate, a mismatch."""

from __future__ import annotations

from tests.chaos.audit import (
    CinderVolume,
    Marked,
    baseline,
    count_duplicates,
    duplicate_volumes,
    find_duplicates,
    find_leaks,
    lost_volumes,
    orphaned,
    owner_in_tags,
    owner_in_text,
    server_mismatches,
    shared_volumes,
    summary_line,
    volume_problems,
)

A, B, C = (
    "6f1c0c8e-0000-4000-8000-00000000000a",
    "6f1c0c8e-0000-4000-8000-00000000000b",
    "6f1c0c8e-0000-4000-8000-00000000000c",
)


def test_markers_are_read_from_tags_names_and_descriptions() -> None:
    assert owner_in_tags(["kumo", f"kumo-owner={A}"]) == A
    assert owner_in_tags(["kumo"]) is None and owner_in_tags(None) is None
    assert owner_in_text(f"t-1-web-soft-anti-affinity kumo-owner={A}") == A
    assert owner_in_text(f"api endpoint kumo-owner={B}") == B
    assert owner_in_text(f"kumo-owner={C}") == C
    # As Kumo writes them now: the cluster in the word, or in a tag beside the owner's.
    assert owner_in_text(f"api endpoint kumo-owner={B}@0123456789ab") == B
    assert owner_in_tags(["kumo", f"kumo-owner={A}", "kumo-cluster=0123456789ab"]) == A
    assert owner_in_text("not-kumo-owner=x hand made") is None  # a word, not a substring
    assert owner_in_text(None) is None and owner_in_text("") is None


def test_a_leak_is_a_marker_of_no_live_object() -> None:
    resources = [
        Marked("server", "s1", A),
        Marked("server", "s2", B),
        Marked("recordset", "r1", C),
    ]
    assert find_leaks(resources, {A, C}) == [Marked("server", "s2", B)]
    assert find_leaks(resources, {A, B, C}) == []


def test_what_was_orphaned_before_the_test_is_not_its_leak() -> None:
    old = [Marked("load_balancer", "lb-old", A)]
    before = baseline(old, live_uids=set())
    assert before == {("load_balancer", "lb-old")}
    now = [*old, Marked("server_group", "g1", B)]
    assert find_leaks(now, set(), before) == [Marked("server_group", "g1", B)]
    assert orphaned(now, set()) == sorted(now)


def test_other_namespaces_objects_are_never_leaks() -> None:
    # Objects of other tests or of `make up` (namespace default) are live: not judged.
    resources = [Marked("server", f"s{i}", uid) for i, uid in enumerate((A, B, C))]
    assert find_leaks(resources, live_uids=[A, B, C, "someone-elses"]) == []


def test_duplicates_are_second_resources_of_a_kind_per_owner() -> None:
    resources = [
        Marked("server", "s2", A),
        Marked("server", "s1", A),
        Marked("server", "s3", B),
        Marked("load_balancer", "lb1", C),
        Marked("load_balancer", "lb2", C),
        Marked("recordset", "r1", C),  # another kind for the same owner: fine
    ]
    found = find_duplicates(resources)
    assert found == {("load_balancer", C): ["lb1", "lb2"], ("server", A): ["s1", "s2"]}
    assert count_duplicates(found) == 2
    assert find_duplicates(resources, owners={B}) == {}
    assert count_duplicates({}) == 0


def test_three_copies_are_two_duplicates() -> None:
    resources = [Marked("server", f"s{i}", A) for i in range(3)]
    assert count_duplicates(find_duplicates(resources)) == 2


def test_every_vm_has_exactly_its_recorded_server() -> None:
    resources = [
        Marked("server", "s-a", A),  # right
        Marked("server", "s-b1", B),  # two servers, one recorded
        Marked("server", "s-b2", B),
        Marked("server", "s-other", C),  # a server, not the recorded one
        Marked("load_balancer", "s-a", A),  # not a server: ignored
    ]
    recorded = {A: "s-a", B: "s-b1", C: "s-c", "d": "s-d", "e": None}
    assert server_mismatches(recorded, resources) == {
        B: ["s-b1", "s-b2"],
        C: ["s-other"],
        "d": [],  # recorded, but no server
    }
    assert server_mismatches({"e": None}, []) == {}  # no id yet, no server: consistent


def test_the_summary_line() -> None:
    line = summary_line(
        test="kill",
        seed=1234,
        kills=5,
        faults={"5xx": 31, "429": 7, "reset": 12, "latency": 40},
        leaks=0,
        duplicates=0,
        replicas=3,
    )
    assert line == (
        "CHAOS test=kill kills=5 faults={'5xx': 31, '429': 7, 'reset': 12, 'latency': 40} "
        "leaks=0 duplicates=0 seed=1234 replicas=3"
    )
    unsettled = summary_line(test="faults", seed=1, kills=0, faults={}, leaks="?", duplicates="?")
    assert "leaks=? duplicates=?" in unsettled


def test_a_volume_is_lost_when_its_object_records_another_id_or_none() -> None:
    first = {"st-data-0": "v0", "st-data-1": "v1", "st-data-2": "v2"}
    now = {"st-data-0": "v0", "st-data-1": "v9", "st-data-2": None}
    assert lost_volumes(first, now) == {"st-data-1": "v1 -> v9", "st-data-2": "v2 -> none"}
    assert lost_volumes(first, dict(first)) == {}


def test_duplicate_volumes_by_name_and_by_marker() -> None:
    volumes = [
        CinderVolume("v1", "ns-st-data-0", A),
        CinderVolume("v2", "ns-st-data-0", B),  # same name, another marker
        CinderVolume("v3", "other", C),
        CinderVolume("v4", "renamed", C),  # same marker, another name
        CinderVolume("v5", "ns-st-data-9", None),  # not judged
        CinderVolume("v6", "ns-st-data-9", None),
    ]
    assert duplicate_volumes(volumes, ["ns-st-data-0", "ns-st-data-1"], [A, C]) == {
        "marker " + C: ["v3", "v4"],
        "name ns-st-data-0": ["v1", "v2"],
    }


def test_a_volume_on_two_servers_is_shared() -> None:
    volumes = [
        CinderVolume("v1", "a", A, ("s1",)),
        CinderVolume("v2", "b", B, ("s2", "s1")),
        CinderVolume("v3", "c", C, ()),
    ]
    assert shared_volumes(volumes) == {"v2": ["s1", "s2"]}


def test_volume_problems_name_every_failure() -> None:
    names = {"st-data-0": "ns-st-data-0", "st-data-1": "ns-st-data-1"}
    first = {"st-data-0": "v0", "st-data-1": "v1"}
    good = [
        CinderVolume("v0", "ns-st-data-0", A, ("s0",)),
        CinderVolume("v1", "ns-st-data-1", B, ()),
    ]
    assert volume_problems(good, first, dict(first), names) == []

    bad = [
        CinderVolume("v0", "ns-st-data-0", A, ("s0", "s9")),
        CinderVolume("v7", "ns-st-data-0", A, ()),  # a second one of the name and marker
    ]
    problems = volume_problems(bad, first, {"st-data-0": "v0", "st-data-1": "v1"}, names)
    assert problems == [
        "lost volume st-data-1: v1 is not in Cinder",
        f"duplicate volumes for marker {A}: ['v0', 'v7']",
        "duplicate volumes for name ns-st-data-0: ['v0', 'v7']",
        "volume v0 attached to 2 servers: ['s0', 's9']",
    ]
