"""Reading the lab kube-apiserver's audit log (tests/integration/apiserver_audit.py), on
events as the API server writes them (JSON lines, Metadata level)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.apiserver_audit import parse, writes_since

LEADER = "node-1_4242_ab12cd"
STANDBY = "node-1_4343_ef34ab"
T0 = datetime(2026, 11, 24, 20, 0, tzinfo=UTC)


def event(
    at: datetime,
    agent: str,
    verb: str = "patch",
    resource: str = "virtualmachines",
    subresource: str | None = "status",
    name: str = "single",
    stage: str = "ResponseComplete",
) -> str:
    ref: dict[str, Any] = {
        "resource": resource,
        "namespace": "t-1",
        "name": name,
        "apiGroup": "kumo.dev",
        "apiVersion": "v1alpha1",
    }
    if subresource:
        ref["subresource"] = subresource
    body = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": "5d3e1f0a-0000-4000-8000-000000000000",
        "stage": stage,
        "requestURI": f"/apis/kumo.dev/v1alpha1/namespaces/t-1/{resource}/{name}",
        "verb": verb,
        "user": {"username": "system:serviceaccount:kumo-system:kumo"},
        "sourceIPs": ["127.0.0.1"],
        "userAgent": agent,
        "objectRef": ref,
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "stageTimestamp": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    return json.dumps(body) + "\n"


def test_a_write_names_its_resource_object_and_sender() -> None:
    (write,) = parse([event(T0, f"kumo/0.1.0 ({LEADER})")])
    assert (write.at, write.verb, write.resource, write.namespace, write.name, write.code) == (
        T0,
        "patch",
        "virtualmachines/status",
        "t-1",
        "single",
        200,
    )
    assert write.by(LEADER) and not write.by(STANDBY)
    assert not write.by("node-1_4242"), "a whole identity, not a prefix of one"


def test_a_line_being_written_and_other_stages_are_left_out() -> None:
    cut = event(T0, "kubectl/v1.37.2")[:80]
    started = event(T0, "kubectl/v1.37.2", stage="ResponseStarted")
    assert parse([started, cut]) == []


def test_the_window_spans_rotated_files_and_needs_the_log(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="no audit log"):
        writes_since(T0, directory=tmp_path)
    rotated = tmp_path / "audit-2026-11-24T20-00-05.000.log"
    rotated.write_text(
        event(T0 - timedelta(seconds=1), f"kumo/0.1.0 ({STANDBY})", name="before")
        + event(T0 + timedelta(seconds=1), f"kumo/0.1.0 ({STANDBY})", name="rotated")
    )
    os.utime(rotated, (T0.timestamp() + 5, T0.timestamp() + 5))  # its last write
    old = tmp_path / "audit-2026-11-24T19-00-00.000.log"
    old.write_text(event(T0 + timedelta(seconds=2), "kumo/0.1.0 (x)", name="ignored"))
    os.utime(old, (T0.timestamp() - 3600, T0.timestamp() - 3600))  # rotated long before
    (tmp_path / "audit.log").write_text(
        event(T0 + timedelta(seconds=3), f"kumo/0.1.0 ({LEADER})", name="current")
        + event(T0 + timedelta(seconds=2), "kubectl/v1.37.2", verb="create", name="by-kubectl")
    )
    assert [w.name for w in writes_since(T0, directory=tmp_path)] == [
        "rotated",
        "by-kubectl",
        "current",
    ]
    assert [w.name for w in writes_since(T0, STANDBY, directory=tmp_path)] == ["rotated"]
