"""A cloud on recorded REST responses: the real OpenStackCloud, built by the real
credentials.connect from clouds.yaml text, with requests-mock answering the HTTP calls
openstacksdk and keystoneauth make (version discovery, the token, the service calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import requests_mock as rm
import yaml

from kumo.cloud import credentials

RECORDED = Path(__file__).parent / "recorded"
PASSWORD = "s3cret-never-logged"

KEYSTONE = "http://127.0.0.1:5000/v3"
NOVA = "http://127.0.0.1:8774/v2.1"
OCTAVIA = "http://127.0.0.1:9876/v2.0"
DESIGNATE = "http://127.0.0.1:9001"

CLOUDS_YAML = yaml.safe_dump(
    {
        "clouds": {
            "kumo": {
                "region_name": "tokyo1",
                "identity_api_version": 3,
                "interface": "public",
                "auth_type": "password",
                "auth": {
                    "auth_url": KEYSTONE,
                    "username": "kumo-demo",
                    "password": PASSWORD,
                    "project_name": "kumo-demo",
                    "user_domain_name": "Default",
                    "project_domain_name": "Default",
                },
            }
        }
    }
)
SOURCE = credentials.CloudSource(CLOUDS_YAML, "kumo", "Secret team-a/kumo-cloud-credentials")


def recorded(name: str) -> Any:
    text = (RECORDED / name).read_text()
    return json.loads(text) if name.endswith(".json") else text


def stub_keystone(mock: rm.Mocker, **token: Any) -> None:
    """Version discovery and the token POST; ``token`` overrides the POST's response."""
    mock.get(KEYSTONE, json=recorded("keystone_v3.json"))
    answer = token or {
        "status_code": 201,
        "json": recorded("keystone_token.json"),
        "headers": {"X-Subject-Token": "gAAAAAB-token"},
    }
    mock.post(f"{KEYSTONE}/auth/tokens", **answer)


def stub_discovery(mock: rm.Mocker) -> None:
    """The version documents the SDK reads before its first call to a service."""
    mock.get(NOVA, json=recorded("nova_v2.1.json"))
    mock.get(f"{DESIGNATE}/", json=recorded("designate_versions.json"))
