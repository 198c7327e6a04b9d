"""The ports declare every method a read or a write, so the dry pass cannot miss one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from kumo import ports
from kumo.cloud.adapter import OpenStackCloud


@pytest.mark.parametrize("port", ports.PORTS, ids=lambda p: p.__name__)
def test_every_port_method_is_declared_a_read_or_a_write(port: type) -> None:
    unmarked = [
        name for name, kind in ports.declared(port).items() if kind not in ("read", "write")
    ]
    assert not unmarked, f"{port.__name__}: mark these @read or @write: {unmarked}"


def test_no_name_is_both_a_read_and_a_write() -> None:
    assert not ports.READS & ports.WRITES


def test_cloud_is_every_port() -> None:
    assert all(port in ports.Cloud.__mro__ for port in ports.PORTS)


def test_an_unmarked_method_is_reported() -> None:
    class Sloppy(ports.CloudPort):
        async def resize_server(self, server_id: str) -> None: ...

    assert ports.declared(Sloppy) == {"resize_server": ""}


def test_the_adapter_implements_every_port_method() -> None:
    for port in ports.PORTS:
        for name in ports.declared(port):
            if name != "region":  # an attribute set in __init__
                assert hasattr(OpenStackCloud, name), f"{port.__name__}.{name}"


# -- the lists a new port part or model value must join ------------------------------------------


def _defined_in(module: object) -> dict[str, object]:
    """The public classes and functions ``module`` defines itself (not imports)."""
    name = getattr(module, "__name__", "")
    return {
        key: value
        for key, value in vars(module).items()
        if not key.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == name
    }


def test_every_port_part_is_a_service_s_and_exported_by_kumo_ports() -> None:
    """A Protocol declared in ports/<service>.py but left out of its service port would
    need no fake, no dry run and no watcher; one left out of kumo.ports' exports is
    reachable only through its module."""
    declared = {
        value
        for info in pkgutil.iter_modules(ports.__path__)
        for value in _defined_in(importlib.import_module(f"kumo.ports.{info.name}")).values()
        if inspect.isclass(value) and ports.CloudPort in value.__mro__
    }
    parts = set(ports.PORTS) | set(ports.SERVICES.values())
    assert declared - {ports.CloudPort} <= parts, "a Protocol no service port inherits"
    for port in parts - {ports.CloudPort}:
        assert port.__name__ in ports.__all__, f"kumo.ports.__all__ lacks {port.__name__}"
        assert getattr(ports, port.__name__) is port


def test_kumo_ports_model_exports_everything_it_defines() -> None:
    """kumo.cloud.model re-exports it with ``*``: a value missing from ``__all__`` is
    missing there, and the adapter reads it through that module."""
    from kumo.cloud import model as cloud_model
    from kumo.ports import model

    missing = sorted(set(_defined_in(model)) - set(model.__all__))
    assert not missing, f"kumo/ports/model.py __all__ lacks {missing}"
    for name in model.__all__:
        assert getattr(cloud_model, name) is getattr(model, name), name
