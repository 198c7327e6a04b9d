"""A cloud service is registered completely, or this fails.

A service is one name (``kumo.ports.SERVICES``: the module of its port) and one package,
``kumo.cloud.services.<name>``, whose ``SERVICE`` holds its calls, watchers and dry-run
half; its fakes live in tests/unit/fakes. Everything else is derived from them or
checked here: the adapter and the dry cloud are composed of every service's halves, the
watch schedules every watcher, the integration tests' ``kumo_leftovers`` and the chaos
audit cover every resource kind a watcher marks, and ``.importlinter`` keeps the service
packages apart. docs/architecture.md has the recipe, and which test here fails when a
step is forgotten.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from kumo import ports
from kumo.cloud import services
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.dry import passes_through
from kumo.cloud.dryrun import DryRunCloud
from kumo.cloud.service import Service
from kumo.cloud.watcher import WatchEnv, Watcher, WatchStats
from tests.chaos.stack import MARKERS
from tests.integration.helpers import LEFTOVERS
from tests.unit.fakes import fakes

REPO = Path(__file__).resolve().parents[2]
SERVICES = list(services.SERVICES.values())


def by_name(service: Service) -> str:
    return service.name


def test_every_port_is_a_service_package_and_every_package_a_port() -> None:
    assert list(services.SERVICES) == list(ports.SERVICES), "in the order of ports.Cloud"
    packages = {p.parent.name for p in (REPO / "src/kumo/cloud/services").glob("*/__init__.py")}
    assert packages == set(ports.SERVICES), "a package under kumo/cloud/services per service"


@pytest.mark.parametrize("service", SERVICES, ids=by_name)
def test_a_service_is_one_name_in_one_package(service: Service) -> None:
    package = f"kumo.cloud.services.{service.name}"
    assert service.port is ports.SERVICES[service.name]
    for part in (service.calls, *service.calls.__mro__, service.dryrun, *service.watchers):
        module = getattr(part, "__module__", "")
        if module.startswith("kumo.cloud.services."):
            assert module == package or module.startswith(package + "."), f"{part}: {package}?"


def test_the_adapter_and_the_dry_cloud_are_every_services_halves() -> None:
    assert OpenStackCloud.__bases__ == tuple(s.calls for s in SERVICES)
    assert DryRunCloud.__bases__ == tuple(s.dryrun for s in SERVICES)
    assert OpenStackCloud.WATCHERS == services.WATCHERS


@pytest.mark.parametrize("service", SERVICES, ids=by_name)
def test_its_dry_run_half_records_every_write_and_passes_every_read(service: Service) -> None:
    own = {
        name: member for cls in service.dryrun.__mro__[:-1] for name, member in vars(cls).items()
    }
    for name, kind in ports.declared(service.port).items():
        if name in ("region", "project_id"):  # DryRunBase's
            continue
        assert name in vars(service.dryrun), f"{service.dryrun.__name__} lacks {name}"
        member = own[name]
        if kind == "write":
            assert not passes_through(member), f"write {name} would be made in a dry pass"
        elif not isinstance(member, property):
            assert passes_through(member), f"read {name} is not passed through"


def _watchers(service: Service) -> list[Watcher]:
    env = WatchEnv(now=lambda: 0.0, stats=WatchStats())
    return [make(None, env) for make in service.watchers]  # type: ignore[arg-type]


@pytest.mark.parametrize("service", SERVICES, ids=by_name)
def test_it_has_watchers_named_after_it_with_their_listings_labels(service: Service) -> None:
    watchers = _watchers(service)
    assert watchers, f"{service.name} has no watcher: its reads would all be GETs"
    for watcher in watchers:
        cls = type(watcher)
        assert watcher.service == service.name or watcher.service.startswith(f"{service.name}."), (
            f"{cls.__name__}.service must be {service.name!r} or {service.name}.<part>"
        )
        assert "api" in vars(cls) and "resource" in vars(cls), f"{cls.__name__}: api, resource"
        assert watcher.caches, f"{cls.__name__} fills no cache"
    assert len({w.service for w in watchers}) == len(watchers)


def marked_kinds() -> set[str]:
    return {kind for s in SERVICES for w in _watchers(s) for kind, *_ in w.marks}


def test_kumo_leftovers_covers_every_kind_a_watcher_marks() -> None:
    missing = marked_kinds() - set(LEFTOVERS)
    assert not missing, f"tests/integration/helpers.py LEFTOVERS lacks {sorted(missing)}"


def test_the_chaos_audit_covers_every_kind_a_watcher_marks() -> None:
    assert set(MARKERS) == marked_kinds(), "tests/chaos/stack.py MARKERS"


def test_every_port_part_has_a_fake_inheriting_it() -> None:
    missing = {p.__name__ for p in ports.PORTS if p is not ports.CloudPort} - {
        p.__name__ for p in fakes()
    }
    assert not missing, f"no fake in tests/unit/fakes inherits {sorted(missing)}"


def test_every_service_package_is_in_the_independence_contract() -> None:
    config = configparser.ConfigParser()
    config.read(REPO / ".importlinter")
    listed = config["importlinter:contract:service-independence"]["modules"].split()
    assert listed == [f"kumo.cloud.services.{name}" for name in services.SERVICES]


def test_mypy_builds_every_fake_in_the_conformance_check() -> None:
    """tests/unit/ports_conformance.py builds each fake, so mypy refuses one that lacks a
    method of its port: a fake left out of it is checked for signatures only."""
    from tests.unit.ports_conformance import conforms

    assert {type(fake) for fake in conforms()} == set(fakes().values())
