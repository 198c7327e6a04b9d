"""What the docs (README.md, docs/*.md) name in backticks exists: field names in the
generated CRD schemas, condition and event reasons in the code, metric families in the
registry — and install.md's metric table lists every family.

Derived, not kept by hand: fields from deploy/base/crds (the committed CRDs, which
test_crd keeps in step with the models), reasons from the string literals of src/ (an
f-string such as ``f"{what.title()}NotFound"`` counts for the words its literals take),
bench/ and the Argo CD health script, metrics from the Prometheus constructors of runtime/metrics.py and cloud/telemetry.py. What a token
is comes from its shape: ``spec.…``/``status.…`` paths and dotted paths that start at a
field (``import.members``), camelCase words (``maxSurge``, also as keys in a YAML
snippet), PascalCase words (``ImportNotFound``), ``kumo_…`` names. A word of one
lowercase part (``replicas``) cannot be told from prose and is not checked. The only
list kept here is :data:`NOT_KUMO`: words of Kubernetes, OpenStack and other tools the
docs quote, none of them Kumo's. The Helm chart's values (deploy/helm/kumo/values.yaml)
count as fields.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Words the docs quote that are not Kumo's (so not in its schemas or code), with whose.
NOT_KUMO = {
    # Kubernetes and its tools: fields of other objects, kustomize, audit levels, kstatus
    "apiGroup", "binaryData", "caBundle", "emptyDir", "httpGet", "runAsNonRoot",
    "runAsUser", "patchesJson6902", "persistentVolumeClaimRetentionPolicy", "maxItems",
    "maxLength", "maxProperties", "RuntimeDefault", "Terminating", "Metadata", "InProgress",
    "Failed", "ownerReferences", "IfNotPresent",
    # kubeconfig fields (the client's credentials: docs/install.md)
    "expirationTimestamp", "tokenFile",
    # The Prometheus operator's Prometheus resource (docs/operations.md)
    "ruleSelector", "serviceMonitorSelector", "serviceMonitorNamespaceSelector",
    # Python's typing (docs/architecture.md)
    "Any",
    # Cluster API (docs/clusters.md), and the provider kinds it plans for Kumo; kubeadm's
    # preflight check the boot shim's nodes skip
    "controlPlaneRef", "kubeletExtraArgs", "KumoCluster", "SystemVerification",
    # The operator's Pod, PodDisruptionBudget, kubelet configuration
    "allowPrivilegeEscalation", "imagePullPolicy", "sizeLimit", "minAvailable",
    "cgroupDriver", "failCgroupV1", "failSwapOn",
    # OpenStack's own error, HTTP, /proc/<pid>/status
    "SecurityGroupRuleExists", "InternalServerError", "Host", "VmHWM", "VmRSS",
}  # fmt: skip

TOKEN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
PASCAL = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*")
CAMEL = re.compile(r"[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+")
PATH = re.compile(r"[a-z][A-Za-z0-9]*(?:\[\d*\])?(?:\.[a-z][A-Za-z0-9]*(?:\[\d*\])?)+")
FILE = re.compile(r"\.(py|ya?ml|md|json|lua|sh|txt|toml)$")
YAML_KEY = re.compile(r"(?:^|[{,\s])([a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+):")
#: A metric's name as the docs write one: alone, with labels, a value or a wildcard.
METRIC = re.compile(r"^(kumo_[a-z_]*[a-z])(?:_\*)?(?=$|[{\s=,])")


def tokens() -> Iterator[tuple[str, str]]:
    """(document, token) for every backticked token outside fenced code blocks."""
    for doc in DOCS:
        text = FENCE.sub("", doc.read_text())
        for match in TOKEN.finditer(text):
            yield doc.name, match.group(1).strip()


@cache
def schema_paths() -> frozenset[tuple[str, ...]]:
    """Every field path of every kind (``("spec", "strategy", "maxSurge")``), list items
    and maps walked through."""
    found: set[tuple[str, ...]] = set()

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for name, prop in (node.get("properties") or {}).items():
            found.add((*path, name))
            walk(prop, (*path, name))
        for nested in ("items", "additionalProperties"):
            if isinstance(node.get(nested), dict):
                walk(node[nested], path)

    for crd in yaml.safe_load_all((ROOT / "deploy/base/crds/kumo.dev.yaml").read_text()):
        walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"], ())
    return frozenset(found)


@cache
def enum_values() -> frozenset[str]:
    text = (ROOT / "deploy/base/crds/kumo.dev.yaml").read_text()
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            found.update(str(v) for v in node.get("enum") or ())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for crd in yaml.safe_load_all(text):
        walk(crd)
        found.add(crd["spec"]["names"]["kind"])
    return frozenset(found)


@cache
def code_words() -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """Words Kumo's code says (string literals, names of its classes and functions), and
    patterns for f-strings that build one (``Imported{noun}Gone``)."""
    words: set[str] = set()
    patterns: set[str] = set()
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "bench").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.add(node.value)
            elif isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                words.add(node.name)
            elif isinstance(node, ast.JoinedStr):
                parts = [
                    re.escape(p.value) if isinstance(p, ast.Constant) else "([A-Za-z]+)"
                    for p in node.values
                ]
                if any(isinstance(p, ast.Constant) for p in node.values):
                    patterns.add("".join(parts))
    words.update(re.findall(r'"([A-Za-z]+)"', (ROOT / "deploy/argocd/health.lua").read_text()))
    return frozenset(words), tuple(re.compile(p) for p in patterns)


def in_code(word: str) -> bool:
    words, patterns = code_words()
    if word in words:
        return True
    lowered = {w.lower().replace(" ", "") for w in words}
    for pattern in patterns:
        match = pattern.fullmatch(word)
        # Each part the f-string fills must be a word the code says (a noun, a kind).
        if match and match.groups() and all(g.lower() in lowered for g in match.groups()):
            return True
    return False


def is_field_path(token: str) -> bool:
    """A path of a kind's fields: from spec or status, or a tail of one (``import.id``)."""
    parts = tuple(p for p in re.split(r"\[\d*\]|\.", token) if p)
    if parts in chart_values():
        return True
    if parts[0] in ("spec", "status"):
        return parts in schema_paths()
    return any(path[-len(parts) :] == parts for path in schema_paths())


def starts_at_a_field(token: str) -> bool:
    """Whether ``token`` reads as a field path: not a file name, nor ``metadata.…``
    (Kubernetes' object metadata, not in Kumo's schemas)."""
    first = re.split(r"\[|\.", token)[0]
    if FILE.search(token) or first == "metadata":
        return False
    return first in ("spec", "status") or any(
        path[-1] == first for path in schema_paths() | chart_values()
    )


@cache
def chart_values() -> frozenset[tuple[str, ...]]:
    """Every key path of the Helm chart's values (``("image", "tag")``): docs/install.md
    documents them beside the kinds' fields."""
    found: set[tuple[str, ...]] = set()

    def walk(node: object, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                found.add((*path, str(name)))
                walk(value, (*path, str(name)))

    walk(yaml.safe_load((ROOT / "deploy/helm/kumo/values.yaml").read_text()), ())
    return frozenset(found)


def field_names() -> frozenset[str]:
    return frozenset(path[-1] for path in schema_paths() | chart_values())


def documented() -> dict[str, set[tuple[str, str]]]:
    """What the docs name, by what it is: field, path, reason, metric."""
    out: dict[str, set[tuple[str, str]]] = {"field": set(), "path": set(), "word": set()}
    out["metric"] = set()
    for doc, token in tokens():
        if PATH.fullmatch(token) and starts_at_a_field(token):
            out["path"].add((doc, token))
        elif CAMEL.fullmatch(token):
            out["field"].add((doc, token))
        elif PASCAL.fullmatch(token):
            out["word"].add((doc, token))
        out["field"].update((doc, key) for key in YAML_KEY.findall(token))
        out["metric"].update((doc, m) for m in METRIC.findall(token))
    return out


def test_the_docs_name_only_fields_the_schemas_have() -> None:
    names = field_names()
    unknown = sorted(
        f"{doc}: `{name}`"
        for doc, name in documented()["field"]
        if name not in names and name not in NOT_KUMO
    )
    assert not unknown, "no such field in any kind's schema:\n" + "\n".join(unknown)


def test_the_docs_name_only_field_paths_the_schemas_have() -> None:
    unknown = sorted(
        f"{doc}: `{path}`" for doc, path in documented()["path"] if not is_field_path(path)
    )
    assert not unknown, "no such field path in any kind's schema:\n" + "\n".join(unknown)


def test_the_docs_name_only_reasons_and_values_the_code_has() -> None:
    """Condition and event reasons, condition types, error categories, enum values."""
    unknown = sorted(
        f"{doc}: `{word}`"
        for doc, word in documented()["word"]
        if word not in enum_values() and not in_code(word) and word not in NOT_KUMO
    )
    assert not unknown, "no such reason or value in the code or schemas:\n" + "\n".join(unknown)


METRIC_TYPES = ("Counter", "Gauge", "Histogram", "Summary", "GaugeMetricFamily")


@cache
def metric_families() -> frozenset[str]:
    """The families Kumo registers (runtime/metrics.py, cloud/telemetry.py): the names
    its Prometheus constructors are given, read from the source (collecting the live
    registry would run collectors other tests leave behind)."""
    found = set()
    for path in (ROOT / "src/kumo/runtime/metrics.py", ROOT / "src/kumo/cloud/telemetry.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in METRIC_TYPES and isinstance(first, ast.Constant):
                found.add(str(first.value))
    return frozenset(found)


def in_the_lab(name: str) -> bool:
    """A name of the lab's own code (dev/: a fake driver, a module), not a metric."""
    return any(name in path.read_text() for path in (ROOT / "dev").rglob("*.*") if path.is_file())


def test_the_docs_name_only_metrics_kumo_exports() -> None:
    families = metric_families()
    # A histogram's series (_bucket, _sum, _count) are named by their family; `kumo_cloud_*`
    # is a prefix of some.
    series = {f"{f}{s}" for f in families for s in ("", "_bucket", "_sum", "_count")}
    unknown = sorted(
        f"{doc}: `{m}`"
        for doc, m in documented()["metric"]
        if m not in series
        and not any(f.startswith(f"{m}_") for f in families)
        and not in_the_lab(m)
    )
    assert not unknown, "no such metric:\n" + "\n".join(unknown)


def test_install_md_lists_every_metric_family() -> None:
    text = (ROOT / "docs/install.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| `kumo_")]
    listed = {m for line in table for m in re.findall(r"kumo_[a-z_]+[a-z]", line.split("|")[1])}
    assert listed == metric_families(), "docs/install.md's metric table is not the registry's"


@pytest.mark.parametrize(
    ("token", "kind"),
    [
        ("spec.import.members", "path"),
        ("strategy.maxSurge", "path"),
        ("status.ports[].members[].drainingSince", "path"),
        ("maxSurge", "field"),
        ("ImportNotFound", "word"),
        ("kumo_reconciles_total", "metric"),
    ],
)
def test_what_a_token_is_comes_from_its_shape(token: str, kind: str) -> None:
    """The classifier sees what the docs write (checked on tokens the docs do use)."""
    assert any(t == token for _, t in documented()[kind]), f"`{token}` not read as {kind}"


def test_a_made_up_name_would_be_caught() -> None:
    assert not is_field_path("spec.strategy.maxSurges")
    assert not is_field_path("spec.target")
    assert not in_code("ImportNotFoundAtAll")
    assert not in_code("BogusNotFound")  # the f-string's part must be a word the code says
    assert in_code("ImageNotFound")  # f"{what.title()}NotFound" with what = "image"
    assert "maxSurges" not in field_names()
