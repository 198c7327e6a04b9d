"""`make bench-fip` (bench/fip_follow.py) without a lab: the delete order, what counts as
repaired and as followed, the table's percentiles and ratios, and the shared harness
pieces it uses (KumoRun.delete of standalone VMs, the sweep of its floating IP)."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import pytest

from bench import contenders, fip_follow, lab
from bench.fip_follow import FIP_VM, PLAIN_VM, Follow, Sample


class Response:
    def __init__(self, status_code: int, body: dict[str, Any] | None = None) -> None:
        self.status_code = status_code
        self._body = body or {}

    def json(self) -> dict[str, Any]:
        return self._body


class World:
    """Kubernetes and the cloud of one `kumo run`, in virtual time: every read of a VM
    is one second; a deleted server's VM is Ready on a new one ``build`` reads later,
    and the address moves to it ``lag`` Neutron reads after that."""

    def __init__(self, build: int = 3, lag: int = 0) -> None:
        self.t = 0.0
        self.build, self.lag = build, lag
        self.servers = {FIP_VM: "s0", PLAIN_VM: "s1"}
        self.building: dict[str, int] = {}
        self.port = "port-s0"
        self.moving: tuple[str, int] | None = None
        self.deleted: list[str] = []
        self.created: list[tuple[str, str]] = []
        self.serial = 1
        self.compute = SimpleNamespace(delete_server=self.delete_server)
        self.network = SimpleNamespace(get=self.neutron_get, ports=self.ports)

    def clock(self) -> float:
        return self.t

    # Kubernetes
    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> None:
        self.created.append((plural, body["metadata"]["name"]))

    def get(self, path: str) -> dict[str, Any] | None:
        name = path.rsplit("/", 1)[1]
        if "/floatingips/" in path:
            return {"status": {"id": "fip-1"}}
        self.t += 1.0
        if name in self.building:
            self.building[name] -= 1
            if self.building[name] > 0:
                return {"status": {"id": self.servers[name], "conditions": []}}
            del self.building[name]
            self.serial += 1
            self.servers[name] = f"s{self.serial}"
            if name == FIP_VM:
                self.moving = (self.servers[name], self.lag)
        ready = [{"type": "Ready", "status": "True"}]
        return {"status": {"id": self.servers[name], "conditions": ready}}

    # OpenStack
    def delete_server(self, server: str) -> None:
        self.deleted.append(server)
        name = next(n for n, s in self.servers.items() if s == server)
        self.building[name] = self.build

    def neutron_get(self, path: str) -> Response:
        if path != "/floatingips/fip-1":
            return Response(404)
        if self.moving is not None:
            server, left = self.moving
            self.moving = (server, left - 1) if left > 0 else None
            if left <= 0:
                self.port = f"port-{server}"
        return Response(200, {"floatingip": {"port_id": self.port}})

    def ports(self, device_id: str) -> list[Any]:
        return [SimpleNamespace(id=f"port-{device_id}")]


def follow(world: World) -> Follow:
    run = Follow(world, world, "kbench-ns", clock=world.clock, poll=0)
    run.fip_id = "fip-1"
    return run


def test_each_round_deletes_both_vms_and_the_first_of_a_round_alternates() -> None:
    order = fip_follow.schedule(4)
    assert order == [FIP_VM, PLAIN_VM, PLAIN_VM, FIP_VM] * 2
    assert order.count(FIP_VM) == order.count(PLAIN_VM) == 4
    assert fip_follow.schedule(0) == []


def test_the_address_points_at_the_first_vm_and_the_sweep_can_find_it() -> None:
    body = fip_follow.fip_body(FIP_VM)
    assert body["kind"] == "FloatingIP" and body["spec"]["virtualMachineRef"] == FIP_VM
    assert body["spec"]["description"].startswith(lab.PREFIX)
    vm = fip_follow.vm_body(PLAIN_VM)
    assert vm["spec"] == {"image": lab.IMAGE, "flavor": lab.FLAVOR, "networks": [lab.NETWORK]}


def test_a_vm_is_repaired_only_when_ready_on_another_server() -> None:
    ready = [{"type": "Ready", "status": "True"}]
    assert fip_follow.on_new_server({"status": {"id": "old", "conditions": ready}}, "old") is None
    assert fip_follow.on_new_server({"status": {"id": "new", "conditions": []}}, "old") is None
    assert fip_follow.on_new_server(None, "old") is None
    assert fip_follow.on_new_server({"status": {"id": "new", "conditions": ready}}, "old") == "new"


def test_the_address_is_on_a_server_only_through_one_of_its_ports() -> None:
    world = World()
    assert fip_follow.address_on(world, "fip-1", "s0")
    assert not fip_follow.address_on(world, "fip-1", "s1")
    assert fip_follow.fip_port(world, "gone") is None
    assert not fip_follow.address_on(world, "gone", "s0")


def test_create_waits_for_both_vms_and_the_address_and_learns_its_id() -> None:
    world = World()
    run = Follow(world, world, "kbench-ns", clock=world.clock, poll=0)
    run.create()
    assert world.created == [
        ("virtualmachines", FIP_VM),
        ("virtualmachines", PLAIN_VM),
        ("floatingips", fip_follow.FIP),
    ]
    assert run.fip_id == "fip-1"


def test_the_plain_vm_is_done_when_ready_on_its_new_server() -> None:
    world = World(build=3)
    sample = follow(world).repair(PLAIN_VM)
    assert world.deleted == ["s1"]
    assert sample == Sample(PLAIN_VM, 3.0, 3.0)  # Ready at the third read after the delete


def test_the_vm_with_the_address_is_done_only_when_the_address_followed() -> None:
    world = World(build=2, lag=2)
    sample = follow(world).repair(FIP_VM)
    assert world.deleted == ["s0"]
    assert sample.ready_s == 2.0
    assert sample.done_s == 4.0  # two more VM reads while Neutron still had the old port
    assert world.port == f"port-{world.servers[FIP_VM]}"


def test_a_vm_without_a_server_fails_the_run_instead_of_timing_nothing() -> None:
    world = World()
    world.get = lambda path: {"status": {}}  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="records no server"):
        follow(world).repair(PLAIN_VM)


def test_the_rounds_give_one_sample_per_delete_in_the_schedules_order() -> None:
    world = World(build=1)
    samples = follow(world).rounds(3)
    assert [s.vm for s in samples] == fip_follow.schedule(3)
    assert len(world.deleted) == 6 and len(set(world.deleted)) == 6


def samples() -> list[Sample]:
    fip = [Sample(FIP_VM, r, r + 1.0) for r in (10.0, 11.0, 12.0, 20.0)]
    plain = [Sample(PLAIN_VM, r, r) for r in (9.0, 10.0, 10.0, 16.0)]
    return fip + plain


def row(text: str, label: str) -> list[str]:
    """The cells after the label of the table row that starts with ``label``."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in\n{text}")


def test_the_table_gives_p50_and_p95_of_each_measure_and_their_ratios() -> None:
    text = fip_follow.table(samples())
    followed = row(text, "VM with the address: address on the new server")
    assert followed == ["4", "12.0", "21.0", "21.0"]
    assert row(text, "VM without an address: Ready on the new server") == [
        "4",
        "10.0",
        "16.0",
        "16.0",
    ]
    assert row(text, "address / VM without (ratio)")[1:3] == ["1.20x", "1.31x"]


def test_a_run_without_samples_prints_dashes_not_a_traceback() -> None:
    text = fip_follow.table([])
    assert "nan" not in text
    assert row(text, "VM without an address: Ready on the new server") == ["0", "—", "—", "—"]
    assert row(text, "address / VM without (ratio)")[1:3] == ["—", "—"]
    assert fip_follow.extra_lines([]) == []


def test_what_the_address_adds_to_its_vms_repair() -> None:
    assert fip_follow.extra_lines(samples()) == [
        "address after its VM was Ready: 1.0/1.0 s p50/p95 (4 deletes)"
    ]


def test_the_command_defaults_to_8_deletes_at_the_test_operators_interval() -> None:
    parser = argparse.ArgumentParser()
    fip_follow.add_arguments(parser)
    args = parser.parse_args([])
    assert (args.deletes, args.drift_seconds, args.no_lock) == (8, 3.0, False)


class Kube:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_all(self, plural: str, namespace: str) -> None:
        self.deleted.append(plural)

    def items(self, plural: str, namespace: str) -> list[Any]:
        return []


@pytest.mark.parametrize("standalone", [False, True])
def test_kumo_run_deletes_standalone_vms_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, standalone: bool
) -> None:
    kube = Kube()
    run = contenders.KumoRun(2, kube, None, 3.0)  # type: ignore[arg-type]
    run.proc = SimpleNamespace(poll=lambda: None)  # type: ignore[assignment]
    waited: list[float] = []
    monkeypatch.setattr(lab, "leftovers", lambda conn: {"servers": []})
    monkeypatch.setattr(
        contenders, "wait_for", lambda what, check, timeout, interval: waited.append(timeout)
    )
    run.delete(standalone, timeout=600 if standalone else None)
    assert ("virtualmachines" in kube.deleted) is standalone
    assert "floatingips" in kube.deleted
    assert waited == ([600] if standalone else [contenders.budget(2)])


def test_the_sweep_finds_the_benchs_floating_ip_by_its_description_only() -> None:
    ips = [
        SimpleNamespace(id="ours", description=f"{fip_follow.DESCRIPTION} kumo-owner=u@c"),
        SimpleNamespace(id="theirs", description="web's public address"),
        SimpleNamespace(id="bare", description=None),
    ]
    conn = SimpleNamespace(
        compute=SimpleNamespace(servers=list, server_groups=list),
        load_balancer=SimpleNamespace(load_balancers=list),
        block_storage=SimpleNamespace(volumes=list),
        network=SimpleNamespace(ips=lambda: ips),
        dns=SimpleNamespace(zones=list),
    )
    assert lab.leftovers(conn)["floating_ips"] == ["ours"]
