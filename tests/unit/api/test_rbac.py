"""deploy/base/rbac.yaml follows api/kinds.py: a kind added without RBAC fails here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kumo.api.common import GROUP
from kumo.api.kinds import KINDS

ROOT = Path(__file__).resolve().parents[3]
#: What the operator does to every kind (watch, finalizers) and to its status subresource.
KIND_VERBS = {"get", "list", "watch", "patch"}
STATUS_VERBS = {"get", "patch"}


def operator_rules() -> list[dict[str, Any]]:
    documents = yaml.safe_load_all((ROOT / "deploy/base/rbac.yaml").read_text())
    role = next(
        d
        for d in documents
        if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == "kumo-operator"
    )
    return [r for r in role["rules"] if GROUP in r.get("apiGroups", [])]


def granted(verbs: set[str]) -> set[str]:
    """Kumo resources (and subresources) on which every verb in ``verbs`` is granted."""
    out: dict[str, set[str]] = {}
    for rule in operator_rules():
        for resource in rule["resources"]:
            out.setdefault(resource, set()).update(rule["verbs"])
    return {resource for resource, have in out.items() if verbs <= have}


def test_operator_may_watch_and_patch_exactly_the_kinds() -> None:
    plurals = {info.plural for info in KINDS}
    assert {r for r in granted(KIND_VERBS) if "/" not in r} == plurals


def test_operator_may_write_the_status_of_exactly_the_kinds() -> None:
    statuses = {f"{info.plural}/status" for info in KINDS}
    assert {r for r in granted(STATUS_VERBS) if "/" in r} == statuses


def test_no_rule_names_a_resource_that_is_not_a_kind() -> None:
    known = {info.plural for info in KINDS} | {f"{info.plural}/status" for info in KINDS}
    named = {resource for rule in operator_rules() for resource in rule["resources"]}
    assert named <= known, f"rbac.yaml names unknown Kumo resources: {sorted(named - known)}"
