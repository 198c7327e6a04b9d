"""A listed server is read straight from Nova's JSON; it must say what the SDK's
``Server`` resource said of the same JSON (the mapping the rest of Kumo was built on)."""

from __future__ import annotations

from typing import Any

import pytest
from openstack.compute.v2 import server as sdk_server

from kumo.cloud.services.compute.calls import _listed_server, _server

ACTIVE: dict[str, Any] = {
    "id": "6a7e1b3c-0000-4000-8000-000000000001",
    "name": "web-0",
    "status": "ACTIVE",
    "OS-EXT-STS:task_state": None,
    "tags": ["kumo", "kumo-owner=uid-1"],
    "metadata": {"kumo-owner": "uid-1", "kumo-spec": "abc"},
    "description": "kumo: default/web-0",
    "addresses": {
        "private": [
            {"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed"},
            {"addr": "fd00::5", "version": 6},
        ],
        "admin": [{"addr": "192.168.1.9", "version": 4}],
    },
    "hostId": "f00d",
    "updated": "2026-11-25T11:30:00Z",
    "image": {"id": "img-1", "links": []},
    "flavor": {"id": "flv-1", "links": []},
    "security_groups": [{"name": "default"}, {"name": "web"}, {"name": "default"}],
    "os-extended-volumes:volumes_attached": [{"id": "vol-2"}, {"id": "vol-1"}],
}


def variants() -> list[dict[str, Any]]:
    boot_from_volume = {**ACTIVE, "image": ""}  # Nova's image of a volume-backed server
    deleting = {**ACTIVE, "OS-EXT-STS:task_state": "deleting"}
    deleted = {**ACTIVE, "status": "DELETED", "OS-EXT-STS:task_state": "deleting"}
    error = {**ACTIVE, "status": "ERROR", "fault": {"code": 500, "message": "No valid host"}}
    new_flavor = {**ACTIVE, "flavor": {"original_name": "m1.tiny", "vcpus": 1}}  # >= 2.47
    building = {
        "id": "6a7e1b3c-0000-4000-8000-000000000002",
        "name": "",
        "status": "BUILD",
        "tags": None,
        "metadata": {},
        "addresses": {},
        "image": {"id": "img-1"},
        "flavor": {"id": "flv-1"},
    }
    return [ACTIVE, boot_from_volume, deleting, deleted, error, new_flavor, building]


@pytest.mark.parametrize("raw", variants())
def test_a_listed_server_reads_as_the_sdk_resource_did(raw: dict[str, Any]) -> None:
    assert _listed_server(raw) == _server(sdk_server.Server.existing(**raw))


def test_the_fields_kumo_decides_on() -> None:
    server = _listed_server(ACTIVE)
    assert server.addresses == [
        ("admin", "192.168.1.9", 4),
        ("private", "10.0.0.5", 4),
        ("private", "fd00::5", 6),
    ]
    assert server.security_groups == ("default", "web")
    assert server.volumes == ("vol-1", "vol-2")
    assert (server.image_id, server.flavor, server.host_id) == ("img-1", "flv-1", "f00d")
    assert _listed_server({**ACTIVE, "OS-EXT-STS:task_state": "deleting"}).status == "DELETING"
    assert _listed_server({**ACTIVE, "image": ""}).image_id is None
