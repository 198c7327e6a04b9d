"""DNSRecord: the engine drives the actuator against the in-memory Designate; tests feed
objects and cloud state in and check recordsets and status out."""

from __future__ import annotations

from typing import Any

from kumo.api.kinds import (
    DNS_RECORD,
    FLOATING_IP,
    LOAD_BALANCER,
    VIRTUAL_MACHINE,
    VIRTUAL_MACHINE_GROUP,
)
from kumo.cloud.model import owner_word
from kumo.engine.objects import Key
from kumo.engine.reconciler import Engine
from kumo.kinds.dnsrecord import plan
from kumo.kinds.dnsrecord.actuator import DNSRecordActuator
from kumo.kinds.labels import GROUP_LABEL
from kumo.ports.model import released_words
from tests.unit.fakes import World, make_body
from tests.unit.fakes.dns import (
    OTHER_ZONE_ID,
    ZONE,
    ZONE_ID,
    FakeDns,
)

MARKER = owner_word("uid-api")
FQDN = "api.kumo-demo.test."
DELETING = "2026-11-22T00:00:00Z"


def new_world(pending_gets: int = 0, **spec: Any) -> World:
    world = World(cloud=FakeDns(pending_gets=pending_gets))
    world.add(DNS_RECORD, "api", {"zone": ZONE, "name": "api", **spec})
    return world


def cloud(world: World) -> FakeDns:
    return world.cloud_as(FakeDns)


def stored(world: World, kind: str, name: str) -> dict:
    return world.stored(kind, name)


def run(world: World, engine: Engine | None = None) -> float | None:
    return world.run(DNSRecordActuator(), "api", engine)


def converge(world: World, limit: int = 20) -> int:
    return world.converge(DNSRecordActuator(), "api", limit)


def status(world: World) -> dict:
    return world.obj(DNS_RECORD, "api").status


def ready(world: World) -> dict:
    return status(world)["conditions"][0]


def set_spec(world: World, **changes: Any) -> None:
    body = stored(world, "DNSRecord", "api")
    body["spec"] = {**body["spec"], **changes}
    body["metadata"]["generation"] += 1


def add_vm(world: World, name: str, ip: str | None, ready: bool = True, **meta: Any) -> dict:
    addresses = [{"network": "net", "ip": ip, "version": 4}] if ip else []
    return world.add_vm(name, ip, ready=ready, status={"addresses": addresses}, **meta)


def add_member(world: World, name: str, ip: str, ready: bool = True, **meta: Any) -> dict:
    return add_vm(world, name, ip, ready, group="web", **meta)


# -- create, values, targets ---------------------------------------------------------------


def test_create_records_the_id_at_once_then_goes_ready() -> None:
    world = new_world(values=["192.0.2.10"], ttl=60, description="API")
    assert run(world) == 1.0
    rs = cloud(world).only()
    assert (rs.zone_id, rs.name, rs.type, rs.records, rs.ttl) == (
        ZONE_ID,
        FQDN,
        "A",
        ["192.0.2.10"],
        60,
    )
    assert rs.description == f"API {MARKER}"
    st = status(world)
    assert (st["id"], st["zoneId"], st["phase"]) == (rs.id, ZONE_ID, "Pending")
    assert ready(world)["status"] == "False"

    assert run(world) is None  # the next get finds it ACTIVE
    st = status(world)
    assert st["phase"] == "Active" and ready(world)["status"] == "True"
    assert (st["fqdn"], st["records"]) == (FQDN, ["192.0.2.10"])
    assert "192.0.2.10" in ready(world)["message"]
    assert cloud(world).calls.count("create_recordset") == 1
    assert world.events.reasons()[0] == "Created"

    calls = len(cloud(world).calls)
    assert run(world) is None  # converged: one get, nothing else
    assert cloud(world).calls[calls:] == ["get_recordset"]


def test_waits_while_designate_is_pending() -> None:
    world = new_world(pending_gets=2, values=["192.0.2.10"])
    run(world)
    assert run(world) == 1.0
    assert (status(world)["phase"], ready(world)["reason"]) == ("Pending", "Provisioning")
    assert converge(world) == 2
    assert cloud(world).calls.count("create_recordset") == 1


def test_recordset_in_error_is_terminal() -> None:
    world = new_world(values=["192.0.2.10"])
    cloud(world).fail_next = True
    run(world)
    assert run(world) == 60.0
    assert ready(world)["reason"] == "RecordsetError"


def test_literal_aaaa_cname_and_txt_values() -> None:
    world = new_world(type="AAAA", values=["2001:DB8:0:0::1", "2001:db8::2"])
    converge(world)
    assert cloud(world).only().records == ["2001:db8::1", "2001:db8::2"]

    world = new_world(type="CNAME", values=["www.example.test"])
    converge(world)
    assert cloud(world).only().records == ["www.example.test."]

    world = new_world(type="TXT", values=["v=spf1 -all"])
    converge(world)
    assert cloud(world).only().records == ['"v=spf1 -all"']
    assert status(world)["records"] == ['"v=spf1 -all"']


def test_absolute_name_and_zone_without_final_dot() -> None:
    world = World(cloud=FakeDns())
    world.add(DNS_RECORD, "api", {"zone": "kumo-demo.test", "name": FQDN, "values": ["1.2.3.4"]})
    converge(world)
    assert cloud(world).only().name == FQDN


def test_bad_input_is_terminal_and_names_the_field() -> None:
    cases = [
        ({"zone": "nope.test."}, "ZoneNotFound", "spec.zone"),
        ({"name": "api.elsewhere.test."}, "NameOutsideZone", "spec.name"),
        ({"values": ["not-an-ip"]}, "InvalidRecord", "spec.values[0]"),
        ({"type": "CNAME", "values": ["a.test.", "b.test."]}, "InvalidSpec", "spec.values"),
        ({"description": "x" * 150}, "InvalidSpec", "spec.description"),  # over 112
        (
            {"values": [], "loadBalancerRef": "missing"},
            "TargetNotFound",
            "spec.loadBalancerRef",
        ),
        (
            {"values": [], "type": "TXT", "virtualMachineRef": "vm"},
            "UnsupportedTarget",
            "spec.type",
        ),
    ]
    for changes, reason, field in cases:
        world = new_world(values=["192.0.2.10"])
        set_spec(world, **changes)
        assert run(world) == 60.0, changes
        cond = ready(world)
        assert cond["reason"] == reason, (changes, cond)
        assert cond["message"].startswith(f"{field}:"), cond["message"]
        assert cloud(world).recordsets == {}  # bad input creates nothing


def test_load_balancer_vip_waits_until_the_vip_exists() -> None:
    world = new_world(loadBalancerRef="web")
    lb = world.add(LOAD_BALANCER, "web", {})
    assert run(world) == 10.0
    assert (status(world)["phase"], ready(world)["reason"]) == ("Waiting", "WaitingForTarget")
    assert "no VIP" in ready(world)["message"]
    assert cloud(world).recordsets == {}

    lb["status"] = {"vip": "10.9.0.5"}
    converge(world)
    assert cloud(world).only().records == ["10.9.0.5"]
    assert ready(world)["status"] == "True"

    lb["status"] = {"vip": "10.9.0.6"}  # a new VIP (the LB was recreated): the record follows
    converge(world)
    assert cloud(world).only().records == ["10.9.0.6"]
    assert cloud(world).calls.count("update_recordset") == 1


def test_floating_ip_target_publishes_its_address() -> None:
    world = new_world(floatingIPRef="web-ip")
    fip = world.add(FLOATING_IP, "web-ip", {"virtualMachineRef": "web"})
    assert run(world) == 10.0
    assert "FloatingIP 'web-ip' has no address yet" in ready(world)["message"]

    fip["status"] = {"address": "203.0.113.12"}
    converge(world)
    assert cloud(world).only().records == ["203.0.113.12"]
    actuator = DNSRecordActuator()
    assert actuator.dependents("FloatingIP", fip, world.store) == [
        Key("DNSRecord", "default", "api")
    ]

    world.store.remove("FloatingIP", "default", "web-ip")
    run(world)
    assert ready(world)["reason"] == "TargetNotFound"
    assert ready(world)["message"].startswith("spec.floatingIPRef: FloatingIP 'web-ip'")


def test_vm_target_a_and_aaaa() -> None:
    world = new_world(virtualMachineRef="vm-1")
    vm = add_vm(world, "vm-1", None)
    assert run(world) == 10.0
    vm["status"] = {
        "ip": "10.0.0.7",
        "addresses": [
            {"network": "net", "ip": "10.0.0.7", "version": 4},
            {"network": "net6", "ip": "2001:db8::7", "version": 6},
        ],
    }
    converge(world)
    assert cloud(world).only().records == ["10.0.0.7"]

    world2 = new_world(virtualMachineRef="vm-1", type="AAAA")
    world2.store.put("VirtualMachine", vm)
    converge(world2)
    assert cloud(world2).only().records == ["2001:db8::7"]


def test_address_family_mismatch_is_terminal() -> None:
    world = new_world(loadBalancerRef="web", type="AAAA")
    world.add(LOAD_BALANCER, "web", {})["status"] = {"vip": "10.9.0.5"}
    assert run(world) == 60.0
    assert ready(world)["reason"] == "AddressFamilyMismatch"
    assert ready(world)["message"].startswith("spec.type:")


def test_a_group_record_reads_its_members_by_label_not_every_vm() -> None:
    world = new_world(virtualMachineGroupRef="web")
    world.add(VIRTUAL_MACHINE_GROUP, "web", {"replicas": 2, "template": {}})
    add_member(world, "web-a", "10.0.0.11")
    for i in range(20):
        add_vm(world, f"loner-{i}", f"10.0.1.{i}")
    listing = world.store.list

    def no_vm_scans(kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        assert kind != "VirtualMachine", "listed every VM of the namespace"
        return listing(kind, namespace)

    world.store.list = no_vm_scans  # type: ignore[method-assign]
    converge(world)
    add_member(world, "web-b", "10.0.0.12")
    converge(world)
    assert cloud(world).only().records == ["10.0.0.11", "10.0.0.12"]


def test_group_target_follows_scale() -> None:
    world = new_world(virtualMachineGroupRef="web")
    world.add(VIRTUAL_MACHINE_GROUP, "web", {"replicas": 2, "template": {}})
    assert run(world) == 10.0  # no Ready member yet
    assert "no Ready member" in ready(world)["message"]

    add_member(world, "web-b", "10.0.0.12")
    add_member(world, "web-a", "10.0.0.11")
    add_member(world, "web-c", "10.0.0.13", ready=False)  # still booting: not published
    add_vm(world, "loner", "10.0.0.99")  # not in the group
    converge(world)
    assert cloud(world).only().records == ["10.0.0.11", "10.0.0.12"]
    assert status(world)["records"] == ["10.0.0.11", "10.0.0.12"]

    # Scale out: the new member turns Ready.
    add_member(world, "web-c", "10.0.0.13")
    converge(world)
    assert cloud(world).only().records == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]

    # Scale in: a member being deleted leaves the record before its server goes.
    add_member(world, "web-a", "10.0.0.11", deletionTimestamp=DELETING)
    converge(world)
    assert cloud(world).only().records == ["10.0.0.12", "10.0.0.13"]
    assert status(world)["records"] == ["10.0.0.12", "10.0.0.13"]


def test_target_deleted_keeps_the_last_records() -> None:
    """Bad input never deletes anything: a dangling reference leaves the values alone."""
    world = new_world(loadBalancerRef="web")
    world.add(LOAD_BALANCER, "web", {})["status"] = {"vip": "10.9.0.5"}
    converge(world)
    world.store.remove("LoadBalancer", "default", "web")
    assert run(world) == 60.0
    assert ready(world)["reason"] == "TargetNotFound"
    assert cloud(world).only().records == ["10.9.0.5"]
    assert status(world)["records"] == ["10.9.0.5"]


# -- ownership -----------------------------------------------------------------------------


def test_adopts_a_recordset_found_by_marker() -> None:
    """A crash between create and the status write: the next pass adopts, no duplicate."""
    world = new_world(values=["192.0.2.10"])
    mine = cloud(world).add(FQDN, "A", ["192.0.2.10"], description=MARKER)
    converge(world)
    assert list(cloud(world).recordsets) == [mine.id]
    assert (status(world)["id"], status(world)["zoneId"]) == (mine.id, ZONE_ID)
    assert "create_recordset" not in cloud(world).calls
    assert "Adopted" in world.events.reasons()


def test_duplicates_from_a_crashed_run_are_reduced_to_one() -> None:
    world = new_world(values=["192.0.2.10"])
    first = cloud(world).add(FQDN, "A", ["192.0.2.10"], description=MARKER)
    cloud(world).add(FQDN.replace("api", "old"), "A", ["192.0.2.10"], description=MARKER)
    converge(world)
    assert list(cloud(world).recordsets) == [first.id]


def test_foreign_recordset_with_the_same_name_is_left_alone() -> None:
    world = new_world(values=["192.0.2.10"])
    foreign = cloud(world).add(FQDN, "A", ["203.0.113.1"], description="hand-made")
    assert run(world) == 60.0
    assert ready(world)["reason"] == "RecordExists"
    assert ready(world)["message"].startswith("spec.name:")
    assert cloud(world).recordsets == {foreign.id: foreign}

    # Finalizing touches nothing that is not Kumo's either.
    stored(world, "DNSRecord", "api")["metadata"]["deletionTimestamp"] = DELETING
    assert run(world) is None
    assert cloud(world).recordsets == {foreign.id: foreign}
    assert world.store.get("DNSRecord", "default", "api") is None


def test_foreign_recordset_of_another_type_coexists() -> None:
    world = new_world(values=["192.0.2.10"])
    foreign = cloud(world).add(FQDN, "TXT", ['"hello"'], description="hand-made")
    converge(world)
    assert cloud(world).recordsets[foreign.id] == foreign
    assert len(cloud(world).recordsets) == 2
    assert ready(world)["status"] == "True"


def test_a_recordset_whose_marker_was_edited_out_is_no_longer_changed() -> None:
    """The marker lives in the description: who removes it takes the recordset over."""
    world = new_world(values=["192.0.2.10"], description="API")
    converge(world)
    rs_id = status(world)["id"]
    cloud(world).edit_out_of_band(rs_id, description="edited by hand", records=["192.0.2.99"])
    run(world)
    assert ready(world)["reason"] == "NotOwned" and rs_id in ready(world)["message"]
    kept = cloud(world).recordsets[rs_id]
    assert (kept.description, kept.records) == ("edited by hand", ["192.0.2.99"])


def test_status_id_naming_a_foreign_recordset_is_never_touched() -> None:
    world = new_world(values=["192.0.2.10"])
    theirs = cloud(world).add(FQDN, "A", ["198.51.100.7"], description="owned by team-x")
    stored(world, "DNSRecord", "api")["status"] = {"id": theirs.id, "zoneId": theirs.zone_id}
    run(world)
    assert ready(world)["reason"] == "NotOwned"
    stored(world, "DNSRecord", "api")["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    converge(world)
    assert cloud(world).recordsets == {theirs.id: theirs}, "neither changed nor deleted"
    assert world.store.get("DNSRecord", "default", "api") is None


# -- updates and replacement -----------------------------------------------------------------


def test_update_in_place_on_values_ttl_and_description_change() -> None:
    world = new_world(values=["192.0.2.10"])
    converge(world)
    rs_id = status(world)["id"]
    set_spec(world, values=["192.0.2.11", "192.0.2.10"], ttl=30, description="new")
    assert run(world) == 1.0
    rs = cloud(world).recordsets[rs_id]
    assert (rs.records, rs.ttl, rs.description) == (
        ["192.0.2.10", "192.0.2.11"],
        30,
        f"new {MARKER}",
    )
    converge(world)
    assert status(world)["records"] == ["192.0.2.10", "192.0.2.11"]
    assert list(cloud(world).recordsets) == [rs_id]  # same recordset, updated
    assert "Updated" in world.events.reasons()


def test_name_type_or_zone_change_replaces_the_recordset() -> None:
    world = new_world(values=["192.0.2.10"])
    converge(world)
    old = status(world)["id"]
    set_spec(world, name="www")
    converge(world)
    rs = cloud(world).only()
    assert rs.id != old and rs.name == "www.kumo-demo.test."
    assert status(world)["id"] == rs.id

    set_spec(world, zone="other.test.")
    converge(world)
    rs = cloud(world).only()
    assert (rs.zone_id, rs.name) == (OTHER_ZONE_ID, "www.other.test.")
    assert status(world)["zoneId"] == OTHER_ZONE_ID

    set_spec(world, type="TXT", values=["hello"])
    converge(world)
    assert (cloud(world).only().type, cloud(world).only().records) == ("TXT", ["hello"])
    assert world.events.reasons().count("Replacing") == 3


# -- finalize ----------------------------------------------------------------------------------


def test_finalize_deletes_and_is_done_only_when_gone() -> None:
    world = new_world(values=["192.0.2.10"])
    converge(world)
    stored(world, "DNSRecord", "api")["metadata"]["deletionTimestamp"] = DELETING
    assert run(world) == 1.0
    assert cloud(world).recordsets == {}
    assert world.store.get("DNSRecord", "default", "api") is not None
    assert run(world) is None
    assert world.store.get("DNSRecord", "default", "api") is None  # finalizer released


def test_orphan_after_a_crash_in_the_create_window_releases_the_recordset() -> None:
    """A crash between Designate's create and the ID's record leaves a status naming
    neither the recordset nor its zone, and the recordset, marked, in the spec's zone:
    Orphan releases it there (where finalize looks), and only then lets the object go."""
    world = new_world(values=["192.0.2.10"], deletionPolicy="Orphan")
    uid = stored(world, "DNSRecord", "api")["metadata"]["uid"]
    made = cloud(world).add(FQDN, "A", ["192.0.2.10"], description=plan.description(None, uid))
    body = stored(world, "DNSRecord", "api")
    body["metadata"].update(deletionTimestamp=DELETING, finalizers=[DNS_RECORD.finalizer])
    assert "zoneId" not in status(world) and "id" not in status(world)

    assert run(world) is None
    assert world.store.get("DNSRecord", "default", "api") is None, "finalizer released"
    rs = cloud(world).recordsets[made.id]
    assert plan.owner_of_recordset(rs) is None, "the marker is gone: never swept"
    assert rs.description == released_words(made.description or "", uid, plan.DESCRIPTION_MAX)
    assert "Released" in world.events.reasons()


def test_orphan_looks_in_the_spec_zone_even_when_the_spec_does_not_validate() -> None:
    world = new_world(values=["192.0.2.10"], deletionPolicy="Orphan", ttl=-5)
    uid = stored(world, "DNSRecord", "api")["metadata"]["uid"]
    made = cloud(world).add(FQDN, "A", ["192.0.2.10"], description=plan.description(None, uid))
    body = stored(world, "DNSRecord", "api")
    body["metadata"].update(deletionTimestamp=DELETING, finalizers=[DNS_RECORD.finalizer])
    assert run(world) is None
    assert plan.owner_of_recordset(cloud(world).recordsets[made.id]) is None


def test_finalize_finds_an_unrecorded_recordset_by_marker() -> None:
    world = new_world(values=["192.0.2.10"])
    cloud(world).add(FQDN, "A", ["192.0.2.10"], description=MARKER)
    body = stored(world, "DNSRecord", "api")
    body["metadata"].update(deletionTimestamp=DELETING, finalizers=[DNS_RECORD.finalizer])
    assert run(world) == 1.0
    assert cloud(world).recordsets == {}
    assert run(world) is None


def test_finalize_when_the_zone_is_gone_is_done() -> None:
    world = new_world(values=["192.0.2.10"])
    converge(world)
    del cloud(world).zones[ZONE_ID]
    cloud(world).recordsets.clear()
    stored(world, "DNSRecord", "api")["metadata"]["deletionTimestamp"] = DELETING
    assert run(world) is None
    assert world.store.get("DNSRecord", "default", "api") is None


# -- dependents and drift --------------------------------------------------------------------


def test_dependents_follow_references() -> None:
    world = World(cloud=FakeDns())
    world.add(DNS_RECORD, "by-lb", {"zone": ZONE, "name": "a", "loadBalancerRef": "web"})
    world.add(DNS_RECORD, "by-vm", {"zone": ZONE, "name": "b", "virtualMachineRef": "vm-1"})
    world.add(DNS_RECORD, "by-group", {"zone": ZONE, "name": "c", "virtualMachineGroupRef": "g"})
    world.add(DNS_RECORD, "literal", {"zone": ZONE, "name": "d", "values": ["1.2.3.4"]})
    actuator = DNSRecordActuator()

    def keys(*names: str) -> list[Key]:
        return [Key("DNSRecord", "default", n) for n in names]

    lb = make_body(LOAD_BALANCER, "web", {})
    assert actuator.dependents("LoadBalancer", lb, world.store) == keys("by-lb")
    vm = make_body(VIRTUAL_MACHINE, "vm-1", {})
    assert actuator.dependents("VirtualMachine", vm, world.store) == keys("by-vm")
    member = make_body(VIRTUAL_MACHINE, "g-x", {}, labels={GROUP_LABEL: "g"})
    assert actuator.dependents("VirtualMachine", member, world.store) == []  # publishes nothing
    member["status"] = {"ip": "10.0.0.5", "conditions": [{"type": "Ready", "status": "True"}]}
    assert actuator.dependents("VirtualMachine", member, world.store) == keys("by-group")
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {})
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == keys("by-group")
    assert actuator.dependents("VirtualMachineGroup", lb, world.store) == []  # kind matters
    elsewhere = make_body(LOAD_BALANCER, "web", {}, namespace="team-b")
    assert actuator.dependents("LoadBalancer", elsewhere, world.store) == []
    assert actuator.dependents("DNSRecord", lb, world.store) == []


def test_only_changes_to_its_values_wake_a_group_record() -> None:
    """A member building, or serving at an address the record has, wakes no record: in a
    big group each member event made the record recompute every member's address."""
    world = World(cloud=FakeDns())
    record = world.add(
        DNS_RECORD, "web", {"zone": ZONE, "name": "w", "virtualMachineGroupRef": "g"}
    )
    record["status"] = {"records": ["10.0.0.5"]}
    actuator = DNSRecordActuator()
    web = [Key("DNSRecord", "default", "web")]
    ready = [{"type": "Ready", "status": "True"}]

    def vm(ip: str | None, conditions: list, **meta: Any) -> dict:
        body = make_body(VIRTUAL_MACHINE, "g-x", {}, labels={GROUP_LABEL: "g"}, **meta)
        body["status"] = {"ip": ip, "conditions": conditions}
        return body

    assert actuator.dependents("VirtualMachine", vm("10.0.0.5", ready), world.store) == []
    assert actuator.dependents("VirtualMachine", vm(None, []), world.store) == web  # can't tell
    assert actuator.dependents("VirtualMachine", vm("10.0.0.6", []), world.store) == []
    assert actuator.dependents("VirtualMachine", vm("10.0.0.6", ready), world.store) == web
    leaving = vm("10.0.0.5", ready, deletionTimestamp="2026-11-22T00:00:00Z")
    assert actuator.dependents("VirtualMachine", leaving, world.store) == web


def test_a_group_status_change_wakes_only_a_record_that_waits_for_it() -> None:
    world = World(cloud=FakeDns())
    record = world.add(
        DNS_RECORD, "web", {"zone": ZONE, "name": "w", "virtualMachineGroupRef": "g"}
    )
    actuator = DNSRecordActuator()
    group = make_body(VIRTUAL_MACHINE_GROUP, "g", {})
    web = [Key("DNSRecord", "default", "web")]
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == web  # not Ready
    record["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == []
    group["metadata"]["deletionTimestamp"] = "2026-11-22T00:00:00Z"
    assert actuator.dependents("VirtualMachineGroup", group, world.store) == web
