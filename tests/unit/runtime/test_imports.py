"""Import and Observe of unmarked resources on the shared default cloud: only where the
namespace is labelled kumo.dev/import-unmarked=true or named by the operator's flag;
labelling a namespace re-queues the objects it refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cli import build_parser
from kumo.engine.errors import TransientError
from kumo.engine.objects import Key
from kumo.engine.text import public_text
from kumo.kinds.virtualmachine.actuator import VirtualMachineActuator
from kumo.runtime.controller import Controller
from kumo.runtime.imports import LABEL, ImportGate, parse_namespaces, refusal
from tests.unit.fakes import FakeKube, FakeServers, make_body
from tests.unit.waiting import until

COMMAND = "kubectl label namespace team-a kumo.dev/import-unmarked=true"


def test_the_decision() -> None:
    assert refusal("team-a", {LABEL: "true"}, ()) is None
    assert refusal("team-a", {}, {"team-a"}) is None
    for labels in ({}, {LABEL: "false"}, {LABEL: "yes"}, {"other": "true"}):
        why = refusal("team-a", labels, {"team-b"})
        assert why is not None and COMMAND in why, labels
    assert "--import-unmarked-namespaces" in (refusal("team-a", {}, ()) or "")


def test_the_flag_names_namespaces() -> None:
    assert parse_namespaces(" team-a, ,team-b ") == {"team-a", "team-b"}
    args = build_parser().parse_args(["run", "--import-unmarked-namespaces", "team-a,team-b"])
    assert args.import_unmarked_namespaces == {"team-a", "team-b"}
    assert build_parser().parse_args(["run"]).import_unmarked_namespaces == frozenset()


class Namespaces:
    """Namespaces by name, their reads counted; ``broken``: reads fail."""

    def __init__(self, **labels: dict[str, str]) -> None:
        self.labels = {name.replace("_", "-"): value for name, value in labels.items()}
        self.reads = 0
        self.broken = False

    async def get(self, name: str) -> dict[str, Any] | None:
        self.reads += 1
        if self.broken:
            raise OSError("API server unreachable")
        if name not in self.labels:
            return None
        return {"metadata": {"name": name, "labels": self.labels[name]}}


KEY = Key("VirtualMachine", "team-a", "vm")


def test_labels_are_read_by_name_at_most_once_per_ttl() -> None:
    namespaces = Namespaces(team_a={})
    now = [0.0]
    gate = ImportGate(namespaces.get, ttl=10, clock=lambda: now[0])
    assert asyncio.run(gate.refusal_for(KEY)) is not None
    assert asyncio.run(gate.refusal_for(KEY)) is not None
    assert namespaces.reads == 1
    namespaces.labels["team-a"] = {LABEL: "true"}
    now[0] = 11
    assert asyncio.run(gate.refusal_for(KEY)) is None
    assert namespaces.reads == 2


def test_a_flagged_namespace_is_never_read() -> None:
    namespaces = Namespaces()
    gate = ImportGate(namespaces.get, {"team-a"})
    assert asyncio.run(gate.refusal_for(KEY)) is None
    assert namespaces.reads == 0


def test_an_unreadable_namespace_keeps_its_last_labels_else_is_transient() -> None:
    namespaces = Namespaces(team_a={LABEL: "true"})
    now = [0.0]
    gate = ImportGate(namespaces.get, ttl=10, clock=lambda: now[0])
    namespaces.broken = True
    with pytest.raises(TransientError) as error:
        asyncio.run(gate.refusal_for(KEY))
    assert error.value.reason == "NamespaceUnavailable"
    namespaces.broken = False
    assert asyncio.run(gate.refusal_for(KEY)) is None
    namespaces.broken = True
    now[0] = 20
    assert asyncio.run(gate.refusal_for(KEY)) is None, "the labels last read"


def test_recheck_returns_the_refused_objects_of_namespaces_allowed_since() -> None:
    namespaces = Namespaces(team_a={}, team_b={})
    gate = ImportGate(namespaces.get)
    other = Key("VirtualMachine", "team-b", "vm")
    for key in (KEY, other):
        assert asyncio.run(gate.refusal_for(key)) is not None
    assert asyncio.run(gate.recheck()) == []
    namespaces.labels["team-a"] = {LABEL: "true"}
    assert asyncio.run(gate.recheck()) == [KEY], "team-b's object still waits"
    assert asyncio.run(gate.recheck()) == [], "re-queued once"
    reads = namespaces.reads
    del namespaces.labels["team-b"]  # the namespace is gone: nobody waits for it
    asyncio.run(gate.recheck())
    asyncio.run(gate.recheck())
    assert namespaces.reads == reads + 1


class Clouds:
    """One FakeServers; team-own has its own Secret (its own project)."""

    def __init__(self) -> None:
        self.cloud = FakeServers()

    async def for_namespace(self, namespace: str) -> Any:
        return self.cloud

    def uses_default(self, namespace: str) -> bool:
        return namespace != "team-own"


def imports_controller(namespaces: Namespaces) -> tuple[Controller, str]:
    clouds = Clouds()
    gate = ImportGate(namespaces.get)
    ctl = Controller([VirtualMachineActuator()], None, clouds, imports=gate)
    ctl.kube = FakeKube(ctl.store)
    ctl.events.emit = lambda *args: None  # type: ignore[method-assign]
    server = clouds.cloud.add_server("legacy", tags=[])
    clouds.cloud.settle()
    return ctl, server.id


def import_vm(ctl: Controller, namespace: str, server_id: str) -> None:
    spec = {"image": "centos79", "flavor": "n3-1vcpu-2gb", "import": {"id": server_id}}
    ctl.observe("VirtualMachine", "ADDED", make_body(VIRTUAL_MACHINE, "vm", spec, namespace))


def ready_reason(ctl: Controller, namespace: str) -> str:
    body = ctl.store.get("VirtualMachine", namespace, "vm")
    assert body is not None
    conditions = (body.get("status") or {}).get("conditions") or []
    return next(c["reason"] for c in conditions if c["type"] == "Ready")


def test_labelling_the_namespace_requeues_and_imports() -> None:
    async def scenario() -> None:
        namespaces = Namespaces(team_a={})
        ctl, sid = imports_controller(namespaces)
        assert ctl.imports is not None
        ctl.imports.every = 0.01
        import_vm(ctl, "team-a", sid)
        await ctl.process(KEY)
        assert ready_reason(ctl, "team-a") == "ImportNotAllowed"
        assert ctl.clouds.cloud.servers[sid]["tags"] == []

        ctl.workers = 0  # the queue shows what the recheck asks
        ctl.queue.done(KEY)
        ctl.start()
        await ctl.queue.get()  # start() queued every object once
        ctl.queue.done(KEY)
        namespaces.labels["team-a"] = {LABEL: "true"}
        await until(lambda: KEY in ctl.queue._due, "the VM re-queued once the label is set")
        await ctl.stop()
        await ctl.process(KEY)
        body = ctl.store.get("VirtualMachine", "team-a", "vm")
        assert body is not None and body["status"]["id"] == sid

    asyncio.run(scenario())


def test_a_namespace_with_its_own_secret_is_not_asked() -> None:
    namespaces = Namespaces(team_own={})
    ctl, sid = imports_controller(namespaces)
    import_vm(ctl, "team-own", sid)
    asyncio.run(ctl.process(Key("VirtualMachine", "team-own", "vm")))
    body = ctl.store.get("VirtualMachine", "team-own", "vm")
    assert body is not None and body["status"]["id"] == sid
    assert namespaces.reads == 0


def test_without_a_gate_every_namespace_may_import() -> None:
    """A controller given no gate (the bench, `kumo plan`) refuses nothing."""
    ctl, sid = imports_controller(Namespaces(team_a={}))
    ctl.imports = None
    import_vm(ctl, "team-a", sid)
    asyncio.run(ctl.process(KEY))
    body = ctl.store.get("VirtualMachine", "team-a", "vm")
    assert body is not None and body["status"]["id"] == sid


def test_the_command_survives_the_condition_limit() -> None:
    """The refusal is a condition's message after the resource's own words and before the
    retry hint: with names of a usual length the gate's 300 characters keep the whole
    command (the longer message it replaced lost it on the lab)."""
    namespace = "team-payments-production"
    why = refusal(namespace, {}, ())
    assert why is not None
    hint = "(permanent: fix the spec or the cloud; retrying every 60s)"
    noun = f"spec.import: keypair {namespace}-deploy-key-2026"
    message = public_text(f"{noun} carries no Kumo marker, and {why} {hint}")
    assert f"kubectl label namespace {namespace} {LABEL}=true" in message
