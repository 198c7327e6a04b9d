"""VirtualMachine: create/adopt/replace/correct/delete against the in-memory Nova."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import replace

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.api.virtualmachine import VirtualMachineSpec
from kumo.cloud.model import marker_tags
from kumo.engine.reconciler import Engine
from kumo.kinds.virtualmachine import plan
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from tests.unit.fakes import World

SPEC = {
    "image": "centos79",
    "flavor": "n3-1vcpu-2gb",
    "initScript": {"value": "ls"},
    "description": "generated operator",
}


def reconcile(world: World, name: str = "vm") -> float | None:
    return world.run(VirtualMachineActuator(), name)


def status(world: World, name: str = "vm") -> dict:
    return world.obj(VIRTUAL_MACHINE, name).status


def test_create_records_id_then_becomes_ready_with_addresses() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    assert reconcile(world) == 2.0
    (server,) = world.cloud.servers.values()
    assert status(world)["id"] == server["id"]
    assert status(world)["phase"] == "Building"
    assert set(marker_tags("uid-vm")) <= set(server["tags"]), "the managed tag is put back"
    assert server["attrs"]["user_data"] == "ls"
    assert server["attrs"]["network_ids"] == ["net-private"]
    world.cloud.settle()
    assert reconcile(world) is None
    assert status(world)["phase"] == "Running"
    assert status(world)["ip"] == server["ip"]
    assert status(world)["conditions"][0]["status"] == "True"
    assert world.cloud.calls.count("create_server") == 1


def one_turn_two_vms() -> tuple[World, float | None]:
    """A cloud that builds one server at a time: vm-a takes the turn; vm-b's first pass."""
    world = World()
    world.cloud.queued_builds_limit = 1
    world.add(VIRTUAL_MACHINE, "vm-a", SPEC)
    world.add(VIRTUAL_MACHINE, "vm-b", SPEC)
    reconcile(world, "vm-a")
    return world, reconcile(world, "vm-b")


def test_a_vm_waits_for_its_turn_while_max_queued_builds_servers_wait_for_a_host() -> None:
    world, delay = one_turn_two_vms()
    assert delay == 60.0
    ready = status(world, "vm-b")["conditions"][0]
    assert (status(world, "vm-b")["phase"], ready["reason"]) == ("Pending", "WaitingToBuild")
    assert "1 of this cloud's servers are queued in Nova" in ready["message"]
    assert world.cloud.calls.count("create_server") == 1
    world.cloud.place()  # vm-a's server is on a host, still building
    assert reconcile(world, "vm-b") == 2.0
    assert status(world, "vm-b")["phase"] == "Building"
    assert world.cloud.calls.count("create_server") == 2


def test_a_vm_deleted_while_waiting_for_its_turn_gives_its_place_up() -> None:
    world, _ = one_turn_two_vms()
    asyncio.run(world.kube.delete(VIRTUAL_MACHINE, "default", "vm-b"))
    reconcile(world, "vm-b")
    assert world.cloud.withdrawn == ["uid-vm-b"]


def test_unknown_image_is_terminal_and_names_the_field() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "image": "nope"})
    reconcile(world)
    ready = status(world)["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("False", "ImageNotFound")
    assert ready["message"].startswith("spec.image: image 'nope' not found")
    assert world.cloud.servers == {}


def test_adopts_a_server_left_by_a_crashed_run() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    leftover = world.cloud.add_server("vm", tags=marker_tags("uid-vm"))
    reconcile(world)
    assert status(world)["id"] == leftover.id
    assert "create_server" not in world.cloud.calls
    assert "Adopted" in world.events.reasons()


def test_foreign_server_with_same_name_is_untouched() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    foreign = world.cloud.add_server("vm", tags=[], metadata={"mine": "yes"}, description="x")
    world.cloud.settle()
    reconcile(world)
    assert status(world)["id"] != foreign.id
    assert world.cloud.servers[foreign.id]["metadata"] == {"mine": "yes"}
    assert world.cloud.servers[foreign.id]["description"] == "x"


def test_out_of_band_changes_are_put_back() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    server = world.cloud.servers[status(world)["id"]]
    server["description"] = "changed in the web UI"
    server["tags"] = ["kumo-owner=uid-vm", "extra"]  # the marker stays: still Kumo's
    server["metadata"]["intruder"] = "1"
    reconcile(world)
    assert server["description"] == "generated operator"
    assert set(marker_tags("uid-vm")) <= set(server["tags"]), "the managed tag is put back"
    assert "intruder" not in server["metadata"]


def test_deleted_server_is_recreated() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    old_id = status(world)["id"]
    world.cloud.servers.clear()
    reconcile(world)
    assert status(world)["id"] not in (None, old_id)
    assert len(world.cloud.servers) == 1


def test_a_server_being_deleted_behind_kumos_back_is_replaced_at_once() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    old_id = status(world)["id"]
    asyncio.run(world.cloud.delete_server(old_id))  # someone else; Nova is still at it
    reconcile(world)
    assert "ServerDeleted" in world.events.reasons()
    assert status(world).get("id") is None
    reconcile(world)
    new_id = status(world)["id"]
    assert new_id not in (None, old_id), "a new server without waiting for the old to go"
    assert world.cloud.calls.count("delete_server") == 1, "Kumo did not delete it again"


def test_immutable_change_replaces_the_server() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    old_id = status(world)["id"]
    body = world.store.get("VirtualMachine", "default", "vm")
    body["spec"] = {**SPEC, "initScript": {"value": "echo new"}}
    reconcile(world)  # deletes the old one
    assert world.cloud.servers[old_id]["status"] == "DELETING"
    reconcile(world)  # creates the new one while Nova still lists the old one
    (server,) = world.cloud.live().values()
    assert server["attrs"]["user_data"] == "echo new"


def test_config_map_script_is_read_and_missing_map_reported() -> None:
    world = World()
    spec = {**SPEC, "initScript": {"configMapRef": {"name": "boot", "key": "script"}}}
    world.add(VIRTUAL_MACHINE, "vm", spec)
    reconcile(world)
    assert status(world)["conditions"][0]["reason"] == "ConfigMapNotFound"
    assert "spec.initScript.configMapRef" in status(world)["conditions"][0]["message"]
    world.store.put(
        "ConfigMap",
        {"metadata": {"name": "boot", "namespace": "default"}, "data": {"script": "echo cm"}},
    )
    reconcile(world)
    (server,) = world.cloud.servers.values()
    assert server["attrs"]["user_data"] == "echo cm"


def test_error_server_is_reported_with_nova_fault() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", {**SPEC, "serverGroup": "sg-1"})
    reconcile(world)
    world.cloud.settle("ERROR")
    next(iter(world.cloud.servers.values()))["fault"] = (
        "No valid host was found. There are not enough hosts available."
    )
    reconcile(world)
    ready = status(world)["conditions"][0]
    assert ready["reason"] == "NoValidHost"
    assert ready["message"].startswith(
        "spec.serverGroup: Nova put the server in ERROR: No valid host"
    )
    assert len(world.cloud.live()) == 1, "no replacement before the grace period"


def test_finalize_deletes_every_owned_server_and_only_those() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    foreign = world.cloud.add_server("vm", tags=[])
    world.delete("VirtualMachine", "vm")
    reconcile(world)
    assert list(world.cloud.live()) == [foreign.id]
    reconcile(world)  # Nova is still deleting it: the finalizer waits, asking nothing more
    assert world.store.get("VirtualMachine", "default", "vm") is not None
    assert world.cloud.calls.count("delete_server") == 1
    world.cloud.settle()
    reconcile(world)
    assert world.store.get("VirtualMachine", "default", "vm") is None


def test_a_delete_nova_fails_is_asked_again_and_the_finalizer_waits() -> None:
    """Nova accepts the DELETE, then fails it (the server is back in ERROR, no task):
    the finalizer stays and the next pass deletes again; it goes once the server does."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    server_id = status(world)["id"]
    world.delete("VirtualMachine", "vm")
    reconcile(world)
    assert world.cloud.calls.count("delete_server") == 1
    world.cloud.servers[server_id].update(status="ERROR", task_state=None)
    reconcile(world)
    assert world.store.get("VirtualMachine", "default", "vm") is not None
    assert world.cloud.calls.count("delete_server") == 2, "the failed delete is retried"
    world.cloud.settle()
    reconcile(world)
    assert world.store.get("VirtualMachine", "default", "vm") is None
    assert server_id not in world.cloud.servers


def test_an_unrecorded_server_holds_the_finalizer_until_it_is_gone() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    body = world.store.get("VirtualMachine", "default", "vm")
    body["status"].pop("id")  # as after a crash between the create and the status write
    body["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    reconcile(world)
    assert world.cloud.calls.count("delete_server") == 1
    reconcile(world)  # Nova is still deleting it
    assert world.store.get("VirtualMachine", "default", "vm") is not None


def test_deletion_waits_for_load_balancers_to_drop_the_member() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    world.store.put(
        "LoadBalancer",
        {
            "metadata": {"name": "lb", "namespace": "default"},
            "status": {
                "ports": [{"port": 80, "members": [{"name": "vm", "address": "x", "port": 80}]}]
            },
        },
    )
    world.delete("VirtualMachine", "vm", "2099-01-01T00:00:00Z")
    reconcile(world)
    assert len(world.cloud.live()) == 1
    assert status(world)["phase"] == "Draining"


def ago(seconds: float) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(("deleted_ago", "waits"), [(200, True), (430, False)])
def test_the_drain_wait_lasts_the_load_balancers_drain_seconds_plus_a_margin(
    deleted_ago: float, waits: bool
) -> None:
    """drainSeconds 300: a VM deleted 200 s ago still waits (beyond the 120 s margin
    alone) and says it is draining; past 300 + 120 s it is deleted anyway."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    reconcile(world)
    member = {"name": "vm", "address": "x", "port": 80, "weight": 0, "drainingSince": ago(5)}
    world.store.put(
        "LoadBalancer",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"ports": [{"realServers": {"drainSeconds": 300}}]},
            "status": {"ports": [{"port": 80, "members": [member]}]},
        },
    )
    body = world.store.get("VirtualMachine", "default", "vm")
    body["metadata"]["deletionTimestamp"] = ago(deleted_ago)
    reconcile(world)
    assert len(world.cloud.live()) == (1 if waits else 0)
    if waits:
        assert status(world)["phase"] == "Draining"
        ready = status(world)["conditions"][0]
        assert ready["message"] == "draining from LoadBalancer web for 300s"


def test_plan_fix_is_empty_for_a_matching_server() -> None:
    spec = VirtualMachineSpec.model_validate(SPEC)
    metadata = plan.desired_metadata(spec, "default", "vm", "h")
    from kumo.cloud.model import Server

    server = Server(
        id="s",
        name="vm",
        status="ACTIVE",
        tags=marker_tags("u"),
        metadata=metadata,
        description="generated operator",
    )
    assert plan.plan_fix(spec, metadata, "u", server).empty


@pytest.mark.parametrize(
    ("change", "replaced"),
    [
        ({"image": "other"}, True),
        ({"flavor": "big"}, True),
        ({"initScript": {"value": "x"}}, True),
        ({"description": "new"}, False),
        ({"metadata": {"a": "b"}}, False),
    ],
)
def test_spec_hash_covers_exactly_the_immutable_fields(change: dict, replaced: bool) -> None:
    before = VirtualMachineSpec.model_validate(SPEC)
    after = VirtualMachineSpec.model_validate({**SPEC, **change})
    user = lambda s: s.init_script.value if s.init_script else None  # noqa: E731
    assert (plan.spec_hash(before, user(before)) != plan.spec_hash(after, user(after))) is replaced


def test_bad_input_on_a_running_vm_deletes_nothing() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    server_id = status(world)["id"]
    world.store.get("VirtualMachine", "default", "vm")["spec"] = {**SPEC, "image": "no-such-image"}
    reconcile(world)
    assert server_id in world.cloud.live()
    assert status(world)["conditions"][0]["reason"] == "ImageNotFound"
    assert status(world)["id"] == server_id


def test_status_id_naming_a_foreign_server_is_never_touched() -> None:
    """A restore from backup / a status writer names a server Kumo did not create."""
    world = World()
    foreign = world.cloud.add_server(
        "db-1", metadata={"owner": "db-team"}, tags=["db"], description="theirs"
    )
    world.cloud.settle()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)["status"] = {"id": foreign.id}
    reconcile(world)
    cond = status(world)["conditions"][0]
    assert (cond["status"], cond["reason"]) == ("False", "NotOwned")
    assert foreign.id in cond["message"]
    kept = world.cloud.servers[foreign.id]
    assert (kept["metadata"], kept["tags"], kept["description"]) == (
        {"owner": "db-team"},
        ["db"],
        "theirs",
    )
    assert len(world.cloud.live()) == 1, "nothing created beside it"
    asyncio.run(world.kube.delete(VIRTUAL_MACHINE, "default", "vm"))
    reconcile(world)
    assert foreign.id in world.cloud.live(), "deleting the object leaves it alone"
    assert world.store.get("VirtualMachine", "default", "vm") is None, "and the object goes"


def test_a_server_whose_marker_was_removed_is_no_longer_changed() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    server = world.cloud.servers[status(world)["id"]]
    server["tags"] = ["kumo"]
    server["description"] = "edited"
    reconcile(world)
    assert status(world)["conditions"][0]["reason"] == "NotOwned"
    assert (server["tags"], server["description"]) == (["kumo"], "edited")


def test_duplicates_from_a_crashed_run_keep_one_and_delete_the_rest() -> None:
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    for _ in range(3):
        world.cloud.add_server("vm", tags=marker_tags("uid-vm"))
    reconcile(world)
    owned = asyncio.run(world.cloud.list_owned_servers("uid-vm"))
    assert [s.id for s in owned] == [status(world)["id"]]
    assert "DuplicateDeleted" in world.events.reasons()


def test_a_second_server_from_a_retried_create_is_found_by_drift_and_deleted() -> None:
    """The create's answer was lost and the call retried: status names one server, a
    second carries the same marker. The cloud watch notices two (tests/unit/cloud/
    test_watch.py) and asks for an audited pass, which deletes the one status does not
    name."""
    world = World()
    world.add(VIRTUAL_MACHINE, "vm", SPEC)
    world.settle(VirtualMachineActuator(), "vm")
    recorded = status(world)["id"]
    extra = world.cloud.add_server("vm", tags=marker_tags("uid-vm"))
    reconcile(world)  # a plain pass goes by status.id and lists nothing
    assert extra.id in world.cloud.servers
    ctx = replace(world.ctx(), audit=True)
    asyncio.run(Engine().run(VirtualMachineActuator(), ctx, world.obj(VIRTUAL_MACHINE, "vm")))
    assert list(world.cloud.live()) == [recorded]
    assert "DuplicateDeleted" in world.events.reasons()
