"""cloud/shares.py on recorded REST responses: Manila's answers as the lab's Zed gives
them (captured from the lab's manila-api at 2.45), the microversion every call sends,
the metadata filter and marker, and which failures are whose."""

from __future__ import annotations

import json

import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services.sharedfs.calls import MICROVERSION
from tests.unit.cloud.test_adapter import fails, run

MANILA = "http://127.0.0.1:8786/v2"
SHARE_ID = "068e4db2-2aec-45d8-ac74-f45f873de7e5"
SHARE = {
    "id": SHARE_ID,
    "size": 1,
    "availability_zone": "nova",
    "status": "available",
    "name": "team-a-data",
    "description": None,
    "share_proto": "NFS",
    "metadata": {"kumo": "managed", "kumo-owner": "uid-data"},
    "share_type": "354fa5ac-9949-4f99-904e-28ccc3941bbd",
    "share_type_name": "default",
}
RULE = {
    "id": "9f7f7319-c519-476d-ae8e-bf357bd1fb6d",
    "share_id": SHARE_ID,
    "access_level": "rw",
    "access_to": "10.10.0.5",
    "access_type": "ip",
    "state": "queued_to_apply",
    "access_key": None,
    "metadata": {"kumo-owner": "uid-data", "kumo-vm": "web-abc12"},
}
NOT_FOUND = {"itemNotFound": {"code": 404, "message": "The resource could not be found."}}


def version_header(request: rm.request._RequestObjectProxy) -> str | None:
    return request.headers.get("X-OpenStack-Manila-API-Version")


def test_owned_shares_are_listed_with_the_metadata_filter(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    listing = requests_mock.get(f"{MANILA}/shares/detail", json={"shares": [SHARE]})
    (share,) = run(cloud.list_owned_shares("uid-data"))
    assert share == model.Share(
        id=SHARE_ID,
        name="team-a-data",
        status="available",
        size=1,
        protocol="NFS",
        share_type_id=SHARE["share_type"],
        availability_zone="nova",
        metadata={"kumo": "managed", "kumo-owner": "uid-data"},
    )
    request = listing.last_request
    assert json.loads(request.qs["metadata"][0]) == {"kumo-owner": "uid-data"}
    assert version_header(request) == MICROVERSION
    run(cloud.list_managed_shares())
    assert json.loads(listing.last_request.qs["metadata"][0]) == {"kumo": "managed"}


def test_a_missing_share_is_none_and_deleting_it_is_fine(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{MANILA}/shares/{SHARE_ID}", status_code=404, json=NOT_FOUND)
    requests_mock.delete(f"{MANILA}/shares/{SHARE_ID}", status_code=404, json=NOT_FOUND)
    assert run(cloud.get_share(SHARE_ID)) is None
    run(cloud.delete_share(SHARE_ID))


def test_rules_carry_the_marker_in_their_metadata(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    action = requests_mock.post(f"{MANILA}/shares/{SHARE_ID}/action", json={"access": RULE})
    rule = run(
        cloud.create_access_rule(
            SHARE_ID, access_to="10.10.0.5", access_level="rw", metadata=RULE["metadata"]
        )
    )
    assert action.last_request.json() == {
        "allow_access": {
            "access_type": "ip",
            "access_to": "10.10.0.5",
            "access_level": "rw",
            "metadata": {"kumo-owner": "uid-data", "kumo-vm": "web-abc12"},
        }
    }
    assert version_header(action.last_request) == MICROVERSION
    assert (rule.state, rule.metadata["kumo-owner"]) == ("queued_to_apply", "uid-data")

    listing = requests_mock.get(f"{MANILA}/share-access-rules", json={"access_list": [RULE]})
    assert run(cloud.list_access_rules(SHARE_ID)) == [rule]
    assert listing.last_request.qs["share_id"] == [SHARE_ID]


def test_a_duplicate_rule_is_the_users_and_a_quota_is_terminal(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(
        f"{MANILA}/shares/{SHARE_ID}/action",
        status_code=400,
        json={"badRequest": {"code": 400, "message": "Share access ip:10.10.0.5 exists."}},
    )
    error = fails(
        cloud.create_access_rule(SHARE_ID, access_to="10.10.0.5", access_level="rw", metadata={})
    )
    assert (error.reason, error.field) == ("CloudRejected", "spec.access")
    requests_mock.post(
        f"{MANILA}/shares",
        status_code=413,
        json={
            "overLimit": {
                "code": 413,
                "message": "Requested share exceeds allowed project/user or share type "
                "gigabytes quota.",
            }
        },
    )
    error = fails(
        cloud.create_share(
            name="x",
            size=5000,
            protocol="NFS",
            share_type_id=None,
            description=None,
            availability_zone=None,
            metadata={},
        )
    )
    assert error.reason == "QuotaExceeded"


def test_export_locations_and_extend(cloud: OpenStackCloud, requests_mock: rm.Mocker) -> None:
    requests_mock.get(
        f"{MANILA}/shares/{SHARE_ID}/export_locations",
        json={
            "export_locations": [
                {"id": "e1", "path": "10.0.0.10:/path/to/fake/share/a", "preferred": True},
                {"id": "e2", "path": "10.0.0.20:/path/to/fake/share/a", "preferred": False},
            ]
        },
    )
    locations = run(cloud.list_export_locations(SHARE_ID))
    assert [(x.path, x.preferred) for x in locations] == [
        ("10.0.0.10:/path/to/fake/share/a", True),
        ("10.0.0.20:/path/to/fake/share/a", False),
    ]
    action = requests_mock.post(f"{MANILA}/shares/{SHARE_ID}/action", status_code=202)
    run(cloud.extend_share(SHARE_ID, 2))
    assert action.last_request.json() == {"extend": {"new_size": 2}}
