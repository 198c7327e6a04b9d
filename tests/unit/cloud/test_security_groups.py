"""cloud/neutron.py and cloud/networks.py on recorded REST responses: the watch's
listings (the project's, keeping what is marked by tag or description; no rules), a
create that writes the marker in the description then tags (the failpoint between the
two; a group it could not tag stays, Kumo's by its description), a rule's body, and
Neutron's 409 for a group in use."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
import requests_mock as rm

from kumo.cloud import model
from kumo.cloud.adapter import OpenStackCloud
from kumo.cloud.services.networking.security_groups import PROBE_FIELDS
from kumo.cloud.services.networking.watch import SecurityGroupWatcher
from tests.unit.cloud.test_adapter import fails, run

NEUTRON = "http://127.0.0.1:9696/v2.0"
PROJECT = "9f2c4e1a7b3d4f6e8a0c2b4d6f8e0a1c"  # recorded/keystone_token.json's project
SG_ID = "7bfbec21-e375-499f-ac8b-a6794518ee7b"
RULE = {  # as the lab's Zed answers a rule's create
    "id": "ce0497de-c2f3-4250-a219-0017ddc56242",
    "security_group_id": SG_ID,
    "ethertype": "IPv4",
    "direction": "ingress",
    "protocol": "tcp",
    "port_range_min": 22,
    "port_range_max": 22,
    "remote_ip_prefix": "10.1.2.3/32",
    "remote_address_group_id": None,
    "normalized_cidr": "10.1.2.3/32",
    "remote_group_id": None,
    "description": "kumo",
    "revision_number": 0,
}
DEFAULT_EGRESS = {
    **RULE,
    "id": "0b0e5a53-2b8b-4e8b-9a55-2d0f3c4b9d11",
    "direction": "egress",
    "protocol": None,
    "port_range_min": None,
    "port_range_max": None,
    "remote_ip_prefix": None,
    "normalized_cidr": None,
    "description": None,
}
GROUP = {
    "id": SG_ID,
    "name": "team-a-web",
    "description": "web tier",
    "tags": [],
    "revision_number": 1,
    "security_group_rules": [DEFAULT_EGRESS],
}
IN_USE = {
    "NeutronError": {
        "type": "SecurityGroupInUse",
        "message": f"Security Group {SG_ID} in use.",
        "detail": "",
    }
}


@pytest.fixture(autouse=True)
def neutron_discovery(requests_mock: rm.Mocker) -> None:
    requests_mock.get(
        "http://127.0.0.1:9696/",
        json={"versions": [{"id": "v2.0", "status": "CURRENT", "links": [
            {"rel": "self", "href": NEUTRON + "/"}]}]},
    )  # fmt: skip


def query(request: rm.request._RequestObjectProxy) -> dict[str, list[str]]:
    return parse_qs(urlparse(request.url).query)


def crash_at(monkeypatch: pytest.MonkeyPatch, module: str, mock: rm.Mocker) -> dict[str, list[str]]:
    """Record, at each failpoint the module reaches, the writes sent to Neutron so far
    (a failpoint named in KUMO_FAILPOINTS kills the process right there)."""
    reached: dict[str, list[str]] = {}

    def failpoint(name: str) -> None:
        reached[name] = [
            f"{r.method} {urlparse(r.url).path.removeprefix('/v2.0')}"
            for r in mock.request_history
            if r.method != "GET" and r.url.startswith(NEUTRON)
        ]

    monkeypatch.setattr(f"{module}.failpoint", failpoint)
    return reached


def test_the_probe_lists_the_project_s_groups_without_rules_and_keeps_kumo_s(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """Not filtered by tag: a group whose tags never came (a lost create answer, Kumo
    killed between the POST and the tag call) is Kumo's by its description word."""
    probe = {k: GROUP[k] for k in PROBE_FIELDS}
    tagged = probe | {"tags": model.marker_tags("uid-web")}
    untagged = probe | {"id": "sg-lost", "description": f"web {model.owner_word('uid-lost')}"}
    foreign = probe | {"id": "sg-theirs", "name": "default", "description": "Default"}
    listing = requests_mock.get(
        f"{NEUTRON}/security-groups", json={"security_groups": [tagged, untagged, foreign]}
    )
    groups = run(cloud.security_group_versions())
    assert [(g.id, g.revision, g.rules) for g in groups] == [(SG_ID, 1, ()), ("sg-lost", 1, ())]
    sent = query(listing.last_request)
    assert sent["project_id"] == [PROJECT] and "tags" not in sent
    assert sorted(sent["fields"]) == sorted(PROBE_FIELDS)


def test_a_create_writes_the_marker_in_the_description_then_the_tags(
    cloud: OpenStackCloud, requests_mock: rm.Mocker, monkeypatch: pytest.MonkeyPatch
) -> None:
    described = f"web tier {model.owner_word('uid-web')}"
    created = requests_mock.post(
        f"{NEUTRON}/security-groups",
        status_code=201,
        json={"security_group": GROUP | {"description": described}},
    )
    tags = requests_mock.put(f"{NEUTRON}/security-groups/{SG_ID}/tags", json={"tags": []})
    crashed = crash_at(monkeypatch, "kumo.cloud.services.networking.security_groups", requests_mock)
    group = run(
        cloud.create_security_group(
            name="team-a-web", description=described, tags=model.marker_tags("uid-web")
        )
    )
    assert created.last_request.json() == {
        "security_group": {"name": "team-a-web", "description": described}
    }
    assert crashed == {"after-security-group-create": ["POST /security-groups"]}, "before tags"
    marker = ["kumo", "kumo-owner=uid-web", f"kumo-cluster={model.cluster()}"]
    assert tags.last_request.json() == {"tags": marker}
    assert group.tags == model.marker_tags("uid-web")
    assert [r.direction for r in group.rules] == ["egress"]
    assert cloud.watch.of(SecurityGroupWatcher).security_groups.lookup(SG_ID) == group


def test_a_group_whose_tags_fail_stays_kumo_s_by_its_description(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    """No longer deleted again: the next pass adopts it and completes its tags."""
    described = f"x {model.owner_word('u')}"
    requests_mock.post(
        f"{NEUTRON}/security-groups",
        status_code=201,
        json={"security_group": GROUP | {"description": described}},
    )
    requests_mock.put(f"{NEUTRON}/security-groups/{SG_ID}/tags", status_code=503, text="down")
    deleted = requests_mock.delete(f"{NEUTRON}/security-groups/{SG_ID}", status_code=204)
    error = fails(
        cloud.create_security_group(name="x", description=described, tags=model.marker_tags("u"))
    )
    assert error.reason == "CloudUnavailable" and not deleted.called
    assert [g.id for g in cloud.watch.of(SecurityGroupWatcher).security_groups.owned_by("u")] == [
        SG_ID
    ]


def test_a_rule_is_created_with_only_what_it_names(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    created = requests_mock.post(
        f"{NEUTRON}/security-group-rules", status_code=201, json={"security_group_rule": RULE}
    )
    rule = run(
        cloud.create_security_group_rule(
            SG_ID,
            direction="ingress",
            ethertype="IPv4",
            protocol="tcp",
            port_range_min=22,
            port_range_max=22,
            remote_ip_prefix="10.1.2.3/32",
            remote_group_id=None,
            description="kumo",
        )
    )
    body = created.last_request.json()["security_group_rule"]
    assert "remote_group_id" not in body and body["remote_ip_prefix"] == "10.1.2.3/32"
    assert model.rule_label(rule) == "ingress IPv4 tcp 22 from 10.1.2.3/32"


def test_a_group_in_use_is_busy_and_a_gone_one_is_fine(
    cloud: OpenStackCloud, requests_mock: rm.Mocker
) -> None:
    url = f"{NEUTRON}/security-groups/{SG_ID}"
    requests_mock.delete(url, status_code=409, json=IN_USE)
    assert fails(cloud.delete_security_group(SG_ID)).reason == "CloudBusy"
    requests_mock.delete(url, status_code=404, json={"NeutronError": {"type": "NotFound"}})
    run(cloud.delete_security_group(SG_ID))
