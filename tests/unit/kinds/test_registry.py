"""The registry of kinds covers every kind of the API table, once each; its services
are the ports each kind calls, and its deletion order follows the declared references."""

from __future__ import annotations

import configparser
import inspect
import re
from pathlib import Path

import pytest

from kumo import ports
from kumo.api.kinds import KINDS
from kumo.kinds import registry
from kumo.kinds.references import REFERENCES, Reference


def test_every_kind_has_one_record() -> None:
    recorded = [record.info.kind for record in registry.RECORDS]
    assert sorted(recorded) == sorted(info.kind for info in KINDS)


def test_each_record_builds_the_actuator_of_its_kind() -> None:
    for record in registry.RECORDS:
        assert record.actuator().info is record.info


def test_actuators_are_fresh_each_call() -> None:
    first, second = registry.actuators(), registry.actuators()
    assert [a.info.kind for a in first] == [r.info.kind for r in registry.RECORDS]
    assert all(a is not b for a, b in zip(first, second, strict=True))


# -- services: the cloud ports each kind uses ------------------------------------------------


CALL = re.compile(r"\bcloud\.(\w+)")


def port_calls(record: registry.KindRecord) -> set[str]:
    """The ports whose methods the kind's package calls on a cloud (``cloud.<name>``)."""
    owner = {
        name: service for service, port in ports.SERVICES.items() for name in ports.declared(port)
    }
    package = Path(inspect.getfile(record.actuator)).parent
    called = {name for path in package.glob("*.py") for name in CALL.findall(path.read_text())}
    return {owner[name] for name in called if name in owner}


@pytest.mark.parametrize("record", registry.RECORDS, ids=lambda r: r.info.kind)
def test_services_are_known_ports_and_those_the_kind_calls(record: registry.KindRecord) -> None:
    # Every kind uses some cloud service, or makes objects of kinds that do (a KumoMachine).
    assert record.services or record.creates
    assert set(record.services) <= set(ports.SERVICES), "names of kumo.ports.SERVICES"
    assert len(set(record.services)) == len(record.services)
    assert port_calls(record) == set(record.services)


def test_every_service_is_used_by_a_kind() -> None:
    assert {s for record in registry.RECORDS for s in record.services} == set(ports.SERVICES)


# -- deletion order -------------------------------------------------------------------------


def test_created_kinds_are_kinds() -> None:
    for record in registry.RECORDS:
        assert set(record.creates) <= set(KINDS), record.info.kind
    made = {info.kind for info in registry.members()}
    assert "VirtualMachine" in made and "Volume" in made  # a group's members and volumes
    assert len(made) == 2


def test_deletion_order_puts_referrers_and_creators_first() -> None:
    order = [info.kind for info in registry.deletion_order()]
    assert sorted(order) == sorted(info.kind for info in KINDS)
    position = {kind: i for i, kind in enumerate(order)}
    for ref in REFERENCES:
        if ref.target in position and ref.orders:  # not ConfigMap, Secret
            assert position[ref.referrer] < position[ref.target], ref
    assert position["VirtualMachineGroup"] < position["VirtualMachine"], "groups remake members"
    # Where nothing orders two kinds, the later record goes first: what the fixtures'
    # reversed(KINDS) gave before it was derived.
    assert order == [info.kind for info in reversed(KINDS)]


def test_deletion_order_refuses_a_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    cycle = (Reference("VirtualMachine", "x", "DNSRecord"),)
    monkeypatch.setattr(registry, "REFERENCES", REFERENCES + cycle)
    with pytest.raises(ValueError, match="cycle"):
        registry.deletion_order()


# -- the import contracts ----------------------------------------------------------------------


REPO = Path(__file__).resolve().parents[3]


def contract_modules(name: str) -> set[str]:
    """The ``modules`` of ``.importlinter``'s contract ``name``."""
    config = configparser.ConfigParser()
    config.read(REPO / ".importlinter")
    return set(config[f"importlinter:contract:{name}"]["modules"].split())


def test_every_kind_package_is_in_the_independence_contract() -> None:
    """A kind's package missing from the list may import another kind's unnoticed
    (``kumo.kinds.network`` was); one listed that is no package checks nothing."""
    kinds_dir = REPO / "src" / "kumo" / "kinds"
    packages = {f"kumo.kinds.{p.parent.name}" for p in kinds_dir.glob("*/__init__.py")}
    assert contract_modules("kind-independence") == packages
    recorded = {record.actuator.__module__.rpartition(".")[0] for record in registry.RECORDS}
    assert recorded == packages, "every kind's package has its record, and no other"
