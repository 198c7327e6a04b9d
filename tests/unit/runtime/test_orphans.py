"""`kumo orphans` and the sweep's hints: what each orphan is, what the sweep does with
it, how to import or delete it by hand."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
import yaml

from kumo.api.kinds import VOLUME
from kumo.cli import build_parser
from kumo.cloud.services import WATCHERS
from kumo.cloud.watch import CloudWatch
from kumo.engine.sweep import DATA_KINDS, OrphanSweep
from kumo.ports import model
from kumo.ports.model import Marked
from kumo.runtime import orphans
from tests.unit.cloud.test_watch import Lists
from tests.unit.fakes import FakeServers
from tests.unit.fakes.blockstorage import FakeBlockStorage
from tests.unit.runtime.test_sweep import Kube


def test_every_kind_the_watch_marks_has_a_remedy() -> None:
    kinds = {"server", "server_group", "loadbalancer", "recordset", "share", "security_group"}
    kinds |= {"keypair", "floatingip", "volume", "router", "network"}
    assert kinds | DATA_KINDS <= set(orphans.REMEDIES)


def test_the_import_hint_removes_the_marker_then_imports_by_id() -> None:
    """An import refuses a resource carrying another object's marker (AlreadyOwned):
    the hint removes it first."""
    leak = Marked("volume", "vol-1", "pgdata", "uid-gone")
    keep = orphans.keep_hint(leak)
    unset = "openstack volume unset --property kumo-owner --property kumo-cluster vol-1"
    assert keep.startswith(f"remove its marker: {unset}"), "the owner's and the cluster's"
    snippet = yaml.safe_load(orphans.import_yaml(leak))
    assert snippet["apiVersion"] == "kumo.dev/v1alpha1" and snippet["kind"] == "Volume"
    assert snippet["spec"]["import"] == {"id": "vol-1"}
    assert orphans.delete_hint(leak) == "openstack volume delete vol-1"
    fip = Marked("floatingip", "fip-1", "203.0.113.9", "uid-gone")
    tags = f"--tag {model.owner_tag('uid-gone')} --tag {model.cluster_tag()}"
    assert f"floating ip unset {tags} fip-1" in orphans.keep_hint(fip)
    rs = Marked("recordset", "rs-1", "www.", "uid-gone", zone_id="zone-1")
    assert orphans.delete_hint(rs) == "openstack recordset delete zone-1 rs-1"
    kp = Marked("keypair", "deploy", "deploy", "uid-gone")
    assert "cannot be taken over" in orphans.keep_hint(kp) and orphans.import_yaml(kp) == ""


def test_the_listing_says_who_owns_what_and_what_the_sweep_does() -> None:
    nova, cinder = FakeServers(), FakeBlockStorage()
    live = {f"uid-live-{i}" for i in range(3)}  # 2 orphans of 5: the breaker holds
    for uid in sorted(live):
        nova.add_server(uid, tags=model.marker_tags(uid))
    leak = nova.add_server("leak", tags=model.marker_tags("uid-vm-gone"))
    volume = cinder.add_volume("pgdata", metadata=model.marker_metadata("uid-vol-gone"))
    cinder.add_volume("theirs")  # no marker: not Kumo's, not listed
    cloud = SimpleNamespace(watch=CloudWatch(Lists(nova, cinder), watchers=WATCHERS))  # type: ignore[arg-type]
    kube = Kube({"VirtualMachine": sorted(live), VOLUME.kind: []})
    rows = asyncio.run(orphans.find_orphans(cloud, kube, OrphanSweep()))
    assert kube.lists > 0, "the owners are read from the API server"
    by_id = {r.id: r for r in rows}
    assert set(by_id) == {leak.id, volume.id}
    assert (by_id[leak.id].sweep, by_id[leak.id].owner) == ("delete", "uid-vm-gone")
    kept = by_id[volume.id]
    assert (kept.kind, kept.name, kept.owner, kept.sweep) == (
        "volume", "pgdata", "uid-vol-gone", "keep"
    )  # fmt: skip
    assert "--orphan-sweep-data volume" in kept.why
    assert f"openstack volume delete {volume.id}" == kept.delete
    text = orphans.render(rows, "text")
    assert f"volume {volume.id} (pgdata) owner uid uid-vol-gone: keep" in text
    assert f"import:\n        id: {volume.id}" in text
    assert json.loads(orphans.render(rows, "json"))[1]["sweep"] == "keep"
    policy = OrphanSweep(delete_data=frozenset({"volume"}))
    opted = orphans.orphans(cloud.watch.marked(), live, policy)
    assert {r.sweep for r in opted} == {"delete"}


def test_the_listing_says_when_the_breaker_keeps_everything() -> None:
    leaks = [Marked("server", f"s{i}", f"s{i}", f"gone-{i}") for i in range(2)]
    rows = orphans.orphans(leaks, set(), OrphanSweep())
    assert {r.sweep for r in rows} == {"keep"} and "suspended" in rows[0].why
    assert orphans.render([], "text") == "no orphaned resources\n"


def test_the_sweep_policy_flags() -> None:
    parser = build_parser()
    run = parser.parse_args(["run"])
    assert run.orphan_sweep_data == frozenset() and run.orphan_sweep_max == 20
    args = parser.parse_args(["orphans", "--orphan-sweep-data", "volume,share", "-o", "json"])
    assert args.orphan_sweep_data == {"volume", "share"} and args.output == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--orphan-sweep-data", "server"])
