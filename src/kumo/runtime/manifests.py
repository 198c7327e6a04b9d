"""Kumo's objects in the manifests `kumo plan -f` names: files, folders, kustomizations
and standard input (``-f -``), read as ``kubectl apply -f`` reads them.

A folder with a ``kustomization.yaml`` is built with ``kubectl kustomize`` (the kubectl
``$KUBECTL`` names — ``dev/kube/env.sh`` sets it to the lab's — else the one on PATH,
else a standalone ``kustomize build``); any other folder is read file by file
(``.yaml``, ``.yml``, ``.json``), its subfolders likewise. Documents that are not
Kumo's (a ConfigMap beside a VirtualMachine) are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from kumo.api.common import GROUP
from kumo.api.kinds import KINDS
from kumo.engine.objects import Body

KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
KUSTOMIZE_TIMEOUT = 120.0
KINDS_BY_NAME = {k.kind for k in KINDS}

#: Builds the kustomization in a folder; returns the YAML it renders.
Kustomize = Callable[[Path], str]


class ManifestError(ValueError):
    """A manifest could not be read; the message names it and the problem, in one line."""


def load(
    paths: list[str],
    namespace: str,
    stdin: TextIO | None = None,
    kustomize: Kustomize | None = None,
) -> list[Body]:
    """Kumo's objects in ``paths`` (files, folders, ``-`` for ``stdin``), each in its
    manifest's namespace, else ``namespace``."""
    build = kustomize or build_kustomization
    docs: list[Any] = []
    for name in paths:
        if name == STDIN:
            if stdin is None:
                raise ManifestError("-f -: no standard input")
            docs += parse(stdin.read(), "standard input")
        else:
            docs += read_path(Path(name), build)
    return kumo_objects(docs, namespace)


def read_path(path: Path, kustomize: Kustomize) -> list[Any]:
    """The YAML documents of one file or folder."""
    if not path.exists():
        raise ManifestError(f"{path}: no such file or folder")
    if not path.is_dir():
        return parse(_read(path), str(path))
    if any((path / name).is_file() for name in KUSTOMIZATIONS):
        return parse(kustomize(path), f"kustomization {path}")
    docs: list[Any] = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            docs += read_path(child, kustomize)
        elif child.suffix in SUFFIXES:
            docs += parse(_read(child), str(child))
    return docs


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as error:
        raise ManifestError(f"{path}: {error.strerror or error}") from None


def parse(text: str, where: str) -> list[Any]:
    """The documents of a YAML (or JSON) stream; a syntax error in one line."""
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ManifestError(f"{where}: not valid YAML ({at}{problem})") from None


def kumo_objects(docs: list[Any], namespace: str) -> list[Body]:
    """The documents that are Kumo objects (``List`` items included), namespaced."""
    found: list[Body] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            found += kumo_objects(doc["items"], namespace)
            continue
        if not str(doc.get("apiVersion", "")).startswith(f"{GROUP}/"):
            continue
        if doc.get("kind") not in KINDS_BY_NAME:
            continue
        doc.setdefault("metadata", {}).setdefault("namespace", namespace)
        found.append(doc)
    return found


def kustomize_command(env: Mapping[str, str], which: Callable[[str], str | None]) -> list[str]:
    """The command that builds a kustomization: ``$KUBECTL kustomize``, else kubectl's
    or kustomize's from PATH."""
    if env.get("KUBECTL"):
        return [env["KUBECTL"], "kustomize"]
    kubectl = which("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    standalone = which("kustomize")
    if standalone:
        return [standalone, "build"]
    raise ManifestError("a kustomization needs kubectl ($KUBECTL or on PATH) or kustomize")


def build_kustomization(path: Path) -> str:
    """``kubectl kustomize PATH``: the rendered YAML, or its error in one line."""
    command = [*kustomize_command(os.environ, shutil.which), str(path)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=KUSTOMIZE_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ManifestError(f"{' '.join(command)}: {error}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit code {done.returncode}"
        raise ManifestError(f"{' '.join(command)}: {why}")
    return done.stdout
