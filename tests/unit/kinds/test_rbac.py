"""deploy/base/rbac.yaml is generated (`make rbac`) from the registry: the committed file
is what `kumo rbac` prints, and what it grants follows the records."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kumo.cli import main
from kumo.kinds import rbac, registry
from kumo.kinds.references import REFERENCES

ROOT = Path(__file__).resolve().parents[3]
RBAC = ROOT / "deploy/base/rbac.yaml"


def test_the_committed_file_is_not_stale() -> None:
    assert RBAC.read_text() == rbac.render(), "deploy/base/rbac.yaml is stale: run `make rbac`"


def test_kumo_rbac_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rbac"]) == 0
    assert capsys.readouterr().out == rbac.render()


def test_the_rendered_comments_leave_the_objects_as_built() -> None:
    assert list(yaml.safe_load_all(rbac.render())) == rbac.manifests()


def operator_rules() -> list[dict]:
    role = next(m for m in rbac.manifests() if m["metadata"]["name"] == "kumo-operator")
    return list(role["rules"])


def test_create_and_delete_only_what_a_kind_creates() -> None:
    """A group's members, a KumoCluster's parts, a KumoMachine's VM: nothing else (so
    `delete loadbalancers` is allowed, for a KumoCluster; `delete shares` is not)."""
    writes = [r for r in operator_rules() if {"create", "delete"} & set(r["verbs"])]
    kumo = [r for r in writes if r["apiGroups"] == ["kumo.dev"]]
    made = dict.fromkeys(i.plural for r in registry.RECORDS for i in r.creates)
    assert [r["resources"] for r in kumo] == [list(made)]
    assert [r["verbs"] for r in kumo] == [["create", "delete"]]
    assert "loadbalancers" in made and "shares" not in made
    infra = [r for r in writes if "infrastructure.kumo.dev" in r["apiGroups"]]
    assert infra == [], "Kumo creates no Cluster API object: CAPI does"


def test_what_kinds_reference_outside_kumo_is_readable() -> None:
    """A ConfigMap named by a spec is read by name, never listed or watched (not
    kube-system's either); a Secret only where a namespace binds kumo-boot-secrets."""
    outside = {ref.target for ref in REFERENCES} - {r.info.kind for r in registry.RECORDS}
    assert outside == {"ConfigMap", "Secret"}
    (config_maps,) = [r for r in operator_rules() if r["resources"] == ["configmaps"]]
    assert config_maps["verbs"] == ["get"]
    boot = next(m for m in rbac.manifests() if m["metadata"]["name"] == "kumo-boot-secrets")
    assert boot["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    secrets = [r for r in operator_rules() if r["resources"] == ["secrets"]]
    assert [r.get("resourceNames") for r in secrets] == [["kumo-cloud-credentials"]]


def test_who_sets_block_owner_deletion_may_update_the_owners_finalizers() -> None:
    """OpenShift's owner-reference admission refuses blockOwnerDeletion: true from whom
    may not update the owner's finalizers: every kind whose code sets it has that right."""
    kinds_dir = ROOT / "src/kumo/kinds"
    # Its own code, or kinds/children.py's (``children.apply``: a KumoCluster's parts).
    setters = {
        path.parent.name
        for path in kinds_dir.glob("*/*.py")
        if '"blockOwnerDeletion": True' in path.read_text() or "children.apply(" in path.read_text()
    }
    assert '"blockOwnerDeletion": True' in (kinds_dir / "children.py").read_text()
    assert setters, "no kind sets blockOwnerDeletion: is the check still looking?"
    by_package = {r.info.kind.lower(): r.info for r in registry.RECORDS}
    finalizers = [r for r in operator_rules() if r["verbs"] == ["update"]]
    granted = {f"{res}.{g}" for r in finalizers for g in r["apiGroups"] for res in r["resources"]}
    wanted = {f"{by_package[p].plural}/finalizers.{by_package[p].group}" for p in setters}
    assert granted == wanted
