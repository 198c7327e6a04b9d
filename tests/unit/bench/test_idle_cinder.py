"""bench/idle_cinder.py's pure parts: which logged Cinder calls are reads of one volume."""

from __future__ import annotations

from bench.idle import IdleResult
from bench.idle_cinder import table, volume_reads
from bench.reqlog import path_shape

PROJECT = "8c96cc2714a744b686326ac51723fdcb"
VOLUME = "0c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


def result(paths: list[str]) -> IdleResult:
    calls: dict[str, int] = {}
    for path in paths:
        key = f"GET {path_shape(path)}"
        calls[key] = calls.get(key, 0) + 1
    return IdleResult(1000, 6, 10.0, {"cinder-volumes": 6}, {"cinder": len(paths)}, calls)


def test_a_listing_is_no_volume_read_but_a_get_by_id_is() -> None:
    listing = f"/v3/{PROJECT}/volumes/detail?metadata=%7B%7D&with_count=true"
    quiet = result([listing] * 6)
    assert volume_reads(quiet) == 0
    assert volume_reads(result([listing, f"/v3/{PROJECT}/volumes/{VOLUME}"])) == 1
    assert "cinder req/min" in table([("this", quiet)]).splitlines()[0]
    assert table([("this", quiet)]).splitlines()[2].split(" | ")[2].strip() == "6.0"
