"""Argo CD health for every kind: the committed argocd-cm patch and Component are what
``kumo argocd-cm`` generates, and deploy/argocd/health.lua, run by gopher-lua (the
interpreter Argo CD embeds; tests/argocd/main.go), gives each body captured from the lab
(tests/argocd/bodies, ``python -m tests.argocd.capture``) the health of its state."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kumo.api import argocd
from kumo.api.kinds import KINDS
from tests import gobuild
from tests.argocd import BODIES, STATES

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "deploy" / "argocd"
SCRIPT = COMPONENT / argocd.SCRIPT


def test_committed_argocd_files_are_current() -> None:
    for name, text in argocd.component_files(SCRIPT.read_text()).items():
        assert (COMPONENT / name).read_text() == text, f"deploy/argocd/{name}: run `make argocd`"


def test_every_kind_gets_the_one_script() -> None:
    patch = yaml.safe_load((COMPONENT / argocd.PATCH).read_text())
    assert set(patch["data"]) == {
        f"resource.customizations.health.{k.group}_{k.kind}" for k in KINDS
    }
    assert set(patch["data"].values()) == {SCRIPT.read_text()}


def _kustomize_with_components() -> bool:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return False
    out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True)
    version = json.loads(out.stdout or b"{}").get("kustomizeVersion", "")
    return version.startswith(("v4", "v5"))


@pytest.mark.skipif(not _kustomize_with_components(), reason="needs kubectl with kustomize v4+")
def test_the_component_patches_argocd_cm_in_its_namespace(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\n"
        "data: {url: https://argo.example}\n"
    )
    components = Path(*[".."] * len(tmp_path.parts[1:]), *COMPONENT.parts[1:])
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [cm.yaml]\ncomponents: [{components}]\n"
    )
    out = subprocess.run(
        ["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, check=True
    )
    (cm,) = yaml.safe_load_all(out.stdout)
    assert cm["metadata"] == {"name": "argocd-cm", "namespace": "argocd"}
    assert cm["data"]["url"] == "https://argo.example", "the user's own settings stay"
    assert (
        cm["data"]["resource.customizations.health.kumo.dev_VirtualMachine"] == SCRIPT.read_text()
    )


@pytest.fixture(scope="module")
def health() -> Any:
    binary = gobuild.build("argocd")

    def run(*paths: Path) -> list[dict[str, str]]:
        out = subprocess.run(
            [binary, str(SCRIPT), *map(str, paths)],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return [json.loads(line) for line in out.stdout.splitlines()]

    return run


def test_every_captured_body_gets_the_health_of_its_state(health: Any) -> None:
    bodies = sorted(BODIES.glob("*.json"))
    states = {p.name.split(".")[1] for p in bodies}
    kinds = {p.name.split(".")[0] for p in bodies}
    assert states == set(STATES), "a state without a captured body"
    assert len(kinds) >= 3, kinds
    for path, result in zip(bodies, health(*bodies), strict=True):
        kind, state = path.name.split(".")[:2]
        assert json.loads(path.read_text())["kind"] == kind
        assert result["status"] == STATES[state], (path.name, result)
        assert result["message"], path.name


def body(name: str) -> dict[str, Any]:
    return json.loads((BODIES / name).read_text())  # type: ignore[no-any-return]


def judge(health: Any, tmp_path: Path, obj: dict[str, Any]) -> dict[str, str]:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(obj))
    (result,) = health(path)
    return result


def test_a_spec_kumo_has_not_seen_yet_is_progressing(health: Any, tmp_path: Path) -> None:
    obj = body("VirtualMachine.ready.json")
    obj["metadata"]["generation"] = obj["status"]["observedGeneration"] + 1
    result = judge(health, tmp_path, obj)
    assert result["status"] == "Progressing"
    assert "generation" in result["message"]


def test_an_object_without_status_is_progressing(health: Any, tmp_path: Path) -> None:
    obj = body("VirtualMachine.ready.json")
    del obj["status"]
    assert judge(health, tmp_path, obj)["status"] == "Progressing"


def test_the_annotation_alone_suspends_and_only_true_does(health: Any, tmp_path: Path) -> None:
    obj = body("VirtualMachine.ready.json")
    obj["metadata"]["annotations"] = {"kumo.dev/paused": " True "}
    assert judge(health, tmp_path, obj)["status"] == "Suspended"
    obj["metadata"]["annotations"] = {"kumo.dev/paused": "false"}
    assert judge(health, tmp_path, obj)["status"] == "Healthy"


def test_a_paused_deletion_is_suspended(health: Any, tmp_path: Path) -> None:
    obj = copy.deepcopy(body("VirtualMachine.paused.json"))
    obj["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    assert judge(health, tmp_path, obj)["status"] == "Suspended"
