"""`kumo plan -f` reads what `kubectl apply -f` reads: files, folders (recursively),
kustomizations (built, not read file by file) and standard input."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from kumo.runtime import manifests
from kumo.runtime.manifests import ManifestError

VM = "apiVersion: kumo.dev/v1alpha1\nkind: VirtualMachine\nmetadata: {name: %s}\nspec: {}\n"
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"


class Kustomize:
    """Stands in for `kubectl kustomize`: records the folders it builds."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.built: list[Path] = []

    def __call__(self, path: Path) -> str:
        self.built.append(path)
        return self.output


def names(found: list[dict]) -> list[str]:
    return [doc["metadata"]["name"] for doc in found]


def test_standard_input_is_read_for_dash() -> None:
    stdin = io.StringIO(VM % "a" + "---\n" + CONFIG_MAP + "---\n" + VM % "b")
    found = manifests.load(["-"], "team-a", stdin)
    assert names(found) == ["a", "b"], "the ConfigMap is not Kumo's"
    assert {doc["metadata"]["namespace"] for doc in found} == {"team-a"}


def test_a_folder_is_read_recursively_and_a_kustomization_is_built(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(VM % "a")
    (tmp_path / "notes.txt").write_text(VM % "not-a-manifest")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(VM % "b")
    (tmp_path / "sub" / "c.json").write_text(
        '{"apiVersion": "kumo.dev/v1alpha1", "kind": "Volume", "metadata": {"name": "c"}}'
    )
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text("resources: [raw.yaml]\n")
    (overlay / "raw.yaml").write_text(VM % "raw-not-patched")
    kustomize = Kustomize(VM % "built" + "---\n" + CONFIG_MAP)
    found = manifests.load([str(tmp_path)], "default", kustomize=kustomize)
    assert names(found) == ["a", "built", "b", "c"]
    assert kustomize.built == [overlay], "a kustomization is built, its files not read one by one"


def test_a_kustomization_folder_named_directly_is_built(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\n")
    kustomize = Kustomize(
        "apiVersion: v1\nkind: List\nitems:\n- " + "\n  ".join((VM % "in-list").splitlines())
    )
    assert names(manifests.load([str(tmp_path)], "default", kustomize=kustomize)) == ["in-list"]


def test_the_manifest_namespace_wins_over_the_default(tmp_path: Path) -> None:
    (tmp_path / "vm.yaml").write_text(VM.replace("{name: %s}", "{name: x, namespace: team-b}"))
    (found,) = manifests.load([str(tmp_path / "vm.yaml")], "team-a")
    assert found["metadata"]["namespace"] == "team-b"


def test_errors_name_the_file_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"^/nope.yaml: no such file or folder$"):
        manifests.load(["/nope.yaml"], "default")
    (tmp_path / "bad.yaml").write_text("kind: [\n")
    with pytest.raises(ManifestError) as caught:
        manifests.load([str(tmp_path / "bad.yaml")], "default")
    assert str(caught.value).startswith(f"{tmp_path / 'bad.yaml'}: not valid YAML (line ")
    assert "\n" not in str(caught.value)
    with pytest.raises(ManifestError, match="no standard input"):
        manifests.load(["-"], "default", None)


def test_the_kustomize_command_is_the_labs_kubectl_else_the_one_on_path() -> None:
    def which(found: dict[str, str]) -> Callable[[str], str | None]:
        return found.get

    lab = {"KUBECTL": "/cache/kube/v1.37.2/kubectl"}
    on_path = {"kubectl": "/usr/bin/kubectl", "kustomize": "/usr/bin/kustomize"}
    assert manifests.kustomize_command(lab, which(on_path)) == [lab["KUBECTL"], "kustomize"]
    assert manifests.kustomize_command({}, which(on_path)) == ["/usr/bin/kubectl", "kustomize"]
    only = {"kustomize": "/usr/bin/kustomize"}
    assert manifests.kustomize_command({}, which(only)) == ["/usr/bin/kustomize", "build"]
    with pytest.raises(ManifestError, match="needs kubectl"):
        manifests.kustomize_command({}, which({}))


def test_a_failing_kustomize_build_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "kubectl"
    script.write_text(
        "#!/bin/sh\necho 'some detail' >&2\necho 'error: no such resource' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(script))
    with pytest.raises(ManifestError) as caught:
        manifests.build_kustomization(tmp_path)
    assert str(caught.value) == f"{script} kustomize {tmp_path}: error: no such resource"
