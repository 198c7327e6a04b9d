"""DryRunCloud records every write of the adapter and makes none."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from kumo import ports
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.dry import passes_through
from kumo.cloud.dryrun import DryRunCloud
from kumo.cloud.model import owner_word
from kumo.engine.dryrun import Action, Change, drift_entries
from tests.unit.fakes import FakeServers
from tests.unit.fakes.dns import ZONE_ID, FakeDns


def test_every_adapter_method_is_a_declared_read_or_a_recorded_write() -> None:
    for name, method in inspect.getmembers(OpenStackCloud, inspect.iscoroutinefunction):
        if name.startswith("_") or name == "close":
            continue
        assert name in ports.READS | ports.WRITES, f"{name} is in no port: neither read nor write"
        mine = getattr(DryRunCloud, name, None)
        assert mine is not None, f"{name} is missing from DryRunCloud"
        if name in ports.READS:
            assert passes_through(mine), f"read {name} is not passed through"
            continue
        assert not passes_through(mine), f"write {name} would slip through DryRunCloud"
        params = inspect.signature(mine).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):  # **attrs
            assert inspect.signature(mine) == inspect.signature(method), name


def test_every_declared_write_is_recorded_and_no_write_passes_through() -> None:
    for name in ports.WRITES:
        mine = getattr(DryRunCloud, name, None)
        assert mine is not None, f"write {name} is not recorded by DryRunCloud"
        assert not passes_through(mine), name
    for name in ports.READS - {"region", "project_id", "max_queued_builds"}:
        assert passes_through(getattr(DryRunCloud, name)), f"read {name} is not passed through"


def test_unknown_attributes_are_refused() -> None:
    with pytest.raises(AttributeError):
        DryRunCloud(FakeServers()).resize_server  # noqa: B018 - not a read, not a known write


def test_writes_are_recorded_with_old_and_new_values() -> None:
    nova = FakeServers()
    sid = nova.add_server("web", tags=[], description="old", metadata={"a": "1"}).id
    dry = DryRunCloud(nova)
    asyncio.run(dry.update_server(sid, description="new"))
    asyncio.run(dry.set_server_metadata(sid, {"a": "2", "kumo:spec-hash": "h"}, ["b"]))
    asyncio.run(dry.delete_server(sid))
    assert nova.servers[sid]["description"] == "old"
    assert nova.servers[sid]["status"] == "BUILD", "not deleted"
    assert dry.actions[0] == Action(
        "update", "server", sid, (Change("spec.description", "old", "new"),)
    )
    assert Change("spec.metadata.a", "1", "2") in dry.actions[1].changes
    assert Change("metadata.kumo:spec-hash", None, "h") in dry.actions[1].changes
    assert dry.actions[2].verb == "delete"


def test_drift_leaves_out_bookkeeping_and_names_missing_resources() -> None:
    actions = [
        Action(
            "update",
            "server",
            "s1",
            (Change("spec.description", "a", "b"), Change("tags", [], ["kumo"])),
        ),
        Action("create", "listener", "web-80"),
    ]
    found = [Change("spec.flavor", "small", "large")]
    assert drift_entries(actions, found) == [
        {"field": "spec.flavor", "desired": "large", "actual": "small"},
        {"field": "spec.description", "desired": "b", "actual": "a"},
        {"field": "listener", "desired": "present", "actual": "absent"},
    ]


def test_a_description_whose_marker_word_alone_moves_is_bookkeeping_not_drift() -> None:
    """A legacy recordset's or floating IP's description re-marked with this cluster's
    word changes nothing the user wrote: no drift under ``driftPolicy: Report``."""
    dns = FakeDns()
    legacy = dns.add("api.kumo-demo.test.", "A", ["10.0.0.1"], "api kumo-owner=uid-api")
    dry = DryRunCloud(dns)
    remarked = f"api {owner_word('uid-api')}"
    asyncio.run(
        dry.update_recordset(
            ZONE_ID, legacy.id, records=["10.0.0.1"], ttl=300, description=remarked
        )
    )
    asyncio.run(
        dry.update_recordset(ZONE_ID, legacy.id, records=["10.0.0.1"], ttl=300, description="www")
    )
    assert [c.field for c in dry.actions[0].changes] == ["description"]
    assert [c.field for c in dry.actions[1].changes] == ["spec.description"]
    assert drift_entries(dry.actions[:1], []) == []
