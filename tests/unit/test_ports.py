"""The ports declare every method a read or a write, so the dry pass cannot miss one."""

from __future__ import annotations

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
