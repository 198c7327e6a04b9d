"""Kumo's CRDs on the real kube-apiserver: install, examples, admission errors, explain."""

from __future__ import annotations

import copy
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kumo.api.common import GROUPS
from kumo.api.crd import crd_documents
from kumo.api.kinds import KINDS, TEMPLATES
from tests.integration.kube_fixtures import KubeEnv, delete_namespace, kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

VM = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "VirtualMachine",
    "metadata": {"name": "bad"},
    "spec": {"image": "centos79", "flavor": "n3-1vcpu-2gb"},
}
VMG = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "VirtualMachineGroup",
    "metadata": {"name": "bad"},
    "spec": {"replicas": 2, "haPolicy": "soft", "template": VM["spec"]},
}
PORT = {
    "port": 80,
    "protocol": "http",
    "realServers": {"protocol": "http", "port": 80, "virtualMachineGroupRef": "g"},
    "monitors": [{"protocol": "http", "port": 80, "endpoint": "/"}],
}
LB = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "LoadBalancer",
    "metadata": {"name": "bad"},
    "spec": {"vipType": "private", "ports": [PORT]},
}
DNS = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "DNSRecord",
    "metadata": {"name": "bad"},
    "spec": {"zone": "z.test.", "name": "api", "type": "A", "ttl": 60, "values": ["10.0.0.1"]},
}
FIP = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "FloatingIP",
    "metadata": {"name": "bad"},
    "spec": {"virtualMachineRef": "web"},
}

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOB3slJYeddLBNCsRNN1u+i93N9IfvaCXzbCIZAN+DsC"
KP = {
    "apiVersion": "kumo.dev/v1alpha1",
    "kind": "KeyPair",
    "metadata": {"name": "bad"},
    "spec": {"publicKey": KEY},
}


def mutate(base: dict, path: str, value: object) -> dict:
    """Copy ``base`` with ``path`` (dotted, ints index lists) set, or deleted if value is ...."""
    doc = copy.deepcopy(base)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = doc
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return doc


INVALID = [
    ("vm-no-image", mutate(VM, "spec.image", ...), "spec.image"),
    ("vm-no-flavor", mutate(VM, "spec.flavor", ...), "spec.flavor"),
    ("vm-image-int", mutate(VM, "spec.image", 5), "spec.image"),
    ("vm-no-spec", mutate(VM, "spec", ...), "spec"),
    (
        "vm-two-scripts",
        mutate(VM, "spec.initScript", {"value": "ls", "configMapRef": {"name": "a", "key": "b"}}),
        "spec.initScript",
    ),
    ("vm-empty-script", mutate(VM, "spec.initScript", {}), "spec.initScript"),
    (
        "vm-script-and-secret",
        mutate(VM, "spec.initScript", {"value": "ls", "secretRef": {"name": "a", "key": "b"}}),
        "spec.initScript",
    ),
    (
        "vm-secret-ref-no-key",
        mutate(VM, "spec.initScript", {"secretRef": {"name": "a"}}),
        "spec.initScript.secretRef.key",
    ),
    (
        "vm-script-too-long",  # base64 of 49150 bytes exceeds Nova's 65535
        mutate(VM, "spec.initScript", {"value": "x" * 49150}),
        "spec.initScript.value",
    ),
    (
        "vm-too-much-metadata",  # Nova's quota is 128 items, Kumo uses 2
        mutate(VM, "spec.metadata", {f"k{i}": "v" for i in range(127)}),
        "spec.metadata",
    ),
    ("vm-metadata-value-long", mutate(VM, "spec.metadata", {"a": "v" * 256}), "spec.metadata.a"),
    ("vm-description-long", mutate(VM, "spec.description", "d" * 256), "spec.description"),
    ("vm-metadata-int", mutate(VM, "spec.metadata", {"a": 1}), "spec.metadata.a"),
    ("vm-networks-string", mutate(VM, "spec.networks", "net"), "spec.networks"),
    ("vm-bad-policy", mutate(VM, "spec.deletionPolicy", "Keep"), "spec.deletionPolicy"),
    ("vmg-negative-replicas", mutate(VMG, "spec.replicas", -1), "spec.replicas"),
    ("vmg-replicas-string", mutate(VMG, "spec.replicas", "two"), "spec.replicas"),
    ("vmg-too-many-replicas", mutate(VMG, "spec.replicas", 1001), "spec.replicas"),
    ("vmg-description-long", mutate(VMG, "spec.description", "d" * 256), "spec.description"),
    (
        "vmg-template-metadata-value-long",
        mutate(VMG, "spec.template.metadata", {"a": "v" * 256}),
        "spec.template.metadata.a",
    ),
    ("vmg-bad-ha", mutate(VMG, "spec.haPolicy", "medium"), "spec.haPolicy"),
    ("vmg-no-template", mutate(VMG, "spec.template", ...), "spec.template"),
    ("vmg-template-no-image", mutate(VMG, "spec.template.image", ...), "spec.template.image"),
    (
        "vmg-import-id-and-name",
        mutate(VMG, "spec.import", {"members": [{"id": "b", "name": "a"}]}),
        "spec.import.members",  # the 1.20 API server names the list, not the item
    ),
    (
        "vmg-import-too-many",
        mutate(VMG, "spec.import", {"members": [{"id": f"s{i}"} for i in range(1001)]}),
        "spec.import.members",
    ),
    ("lb-bad-vip", mutate(LB, "spec.vipType", "internet"), "spec.vipType"),
    ("lb-description-long", mutate(LB, "spec.description", "d" * 256), "spec.description"),
    ("lb-port-zero", mutate(LB, "spec.ports.0.port", 0), "spec.ports[0].port"),
    ("lb-port-high", mutate(LB, "spec.ports.0.port", 70000), "spec.ports[0].port"),
    ("lb-ports-map", mutate(LB, "spec.ports", {"http": PORT}), "spec.ports"),
    ("lb-no-ports", mutate(LB, "spec.ports", []), "spec.ports"),
    ("lb-bad-protocol", mutate(LB, "spec.ports.0.protocol", "ftp"), "spec.ports[0].protocol"),
    (
        "lb-backend-port",
        mutate(LB, "spec.ports.0.realServers.port", 0),
        "spec.ports[0].realServers.port",
    ),
    (
        "lb-no-real-servers",
        mutate(LB, "spec.ports.0.realServers", ...),
        "spec.ports[0].realServers",
    ),
    (
        "lb-bad-monitor",
        mutate(LB, "spec.ports.0.monitors.0.protocol", "smtp"),
        "spec.ports[0].monitors[0].protocol",
    ),
    ("dns-ttl-zero", mutate(DNS, "spec.ttl", 0), "spec.ttl"),
    ("dns-description-long", mutate(DNS, "spec.description", "d" * 113), "spec.description"),
    ("dns-bad-type", mutate(DNS, "spec.type", "MX"), "spec.type"),
    ("dns-two-targets", mutate(DNS, "spec.loadBalancerRef", "lb"), "spec"),
    ("dns-no-target", mutate(DNS, "spec.values", ...), "spec"),
    ("kp-no-key", mutate(KP, "spec.publicKey", ...), "spec"),
    (
        "kp-key-and-from",
        mutate(KP, "spec.publicKeyFrom", {"configMapRef": {"name": "a", "key": "b"}}),
        "spec",
    ),
    (
        "kp-from-both",
        mutate(
            mutate(KP, "spec.publicKey", ...),
            "spec.publicKeyFrom",
            {"configMapRef": {"name": "a", "key": "b"}, "secretRef": {"name": "a", "key": "b"}},
        ),
        "spec.publicKeyFrom",
    ),
    ("kp-name-with-dot", mutate(KP, "spec.name", "a.b"), "spec.name"),
    ("fip-description-long", mutate(FIP, "spec.description", "d" * 208), "spec.description"),
    ("fip-empty-network", mutate(FIP, "spec.network", ""), "spec.network"),
    # CEL and list-map rules (Kubernetes >= 1.29)
    (
        "fip-two-targets",
        mutate(FIP, "spec.loadBalancerRef", "lb"),
        "give at most one target, virtualMachineRef or loadBalancerRef",
    ),
    ("lb-duplicate-port", mutate(LB, "spec.ports", [PORT, PORT]), "spec.ports[1]"),
    (
        "vmg-no-rollout",
        mutate(VMG, "spec.strategy", {"maxSurge": 0, "maxUnavailable": 0}),
        "maxSurge and maxUnavailable cannot both be 0",
    ),
    (
        "vmg-surge-not-a-share",
        mutate(VMG, "spec.strategy", {"maxSurge": "1"}),
        "spec.strategy.maxSurge",
    ),
    (
        "vmg-surge-over-100",
        mutate(VMG, "spec.strategy", {"maxSurge": "101%"}),
        "spec.strategy.maxSurge",
    ),
    (
        "vm-long-metadata-key",
        mutate(VM, "spec.metadata", {"k" * 256: "v"}),
        "metadata keys are at most 255 characters",
    ),
    (
        "kp-not-a-key",
        mutate(KP, "spec.publicKey", "-----BEGIN PUBLIC KEY-----"),
        "spec.publicKey must be one OpenSSH public key line",
    ),
    (
        "kp-two-keys",
        mutate(KP, "spec.publicKey", f"{KEY}\n{KEY}\n"),
        "spec.publicKey must be one OpenSSH public key line",
    ),
]


@pytest.fixture(scope="module")
def scratch_namespace(crds: KubeEnv) -> Iterator[str]:
    """One namespace for the whole table: nothing is ever admitted into it."""
    name = f"t-invalid-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    yield name
    delete_namespace(name)


def test_crds_are_established(crds: KubeEnv) -> None:
    """Kumo's and its Cluster API provider's (deploy/ installs both)."""
    names = kubectl("get", "crd", "-o", "name").stdout.split()
    for crd in (info.crd_name for info in (*KINDS, *TEMPLATES)):
        assert f"customresourcedefinition.apiextensions.k8s.io/{crd}" in names


def test_every_example_applies(namespace: str) -> None:
    applied = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        out = kubectl("apply", "-n", namespace, "-f", str(path)).stdout
        assert "created" in out, out
        manifest = yaml.safe_load(path.read_text())
        group = manifest["apiVersion"].split("/")[0]  # kumo.dev, infrastructure.kumo.dev
        applied.append(f"{manifest['kind'].lower()}.{group}/{manifest['metadata']['name']}")
    # Short names (Share's singular is short already) and the `kumo` category find them (a
    # running Kumo may add group members).
    short = ",".join((info.short_names or (info.singular,))[0] for info in KINDS)
    by_short_name = kubectl("get", short, "-n", namespace, "-o", "name").stdout.split()
    by_category = kubectl("get", "kumo", "-n", namespace, "-o", "name").stdout.split()
    for name in applied:
        assert name in by_short_name and name in by_category, name
    assert len(applied) == len(KINDS), "one example per kind (examples/capi: CAPI's own)"
    assert {name.split(".")[0] for name in applied} == {info.singular for info in KINDS}


@pytest.mark.parametrize(("case", "manifest", "field"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_manifest_is_rejected_naming_the_field(
    scratch_namespace: str, case: str, manifest: dict, field: str
) -> None:
    namespace = scratch_namespace
    # --validate=false: judge the API server's admission, not kubectl's client-side check.
    proc = kubectl(
        "apply",
        "--validate=false",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump(manifest),
        check=False,
    )
    assert proc.returncode != 0, f"{case} was accepted"
    assert "is invalid" in proc.stderr, proc.stderr
    assert field in proc.stderr, f"{case}: {field!r} not in {proc.stderr!r}"
    assert kubectl("get", "kumo", "-n", namespace, "-o", "name").stdout.strip() == ""


def test_secret_ref_cannot_name_another_namespace(namespace: str) -> None:
    """The ref has no namespace field: one given anyway is pruned, the Secret is always
    looked up in the VM's own namespace."""
    ref = {"name": "boot", "key": "script", "namespace": "kube-system"}
    manifest = mutate(
        mutate(VM, "metadata.name", "by-secret"), "spec.initScript", {"secretRef": ref}
    )
    kubectl("apply", "--validate=false", "-n", namespace, "-f", "-", input=yaml.safe_dump(manifest))
    stored = kubectl(
        "get", "vm", "by-secret", "-n", namespace, "-o", "jsonpath={.spec.initScript.secretRef}"
    ).stdout
    assert "boot" in stored and "kube-system" not in stored


#: A group no CRD of the lab has: Kumo's CRDs renamed into it are judged as new ones.
SCRATCH_GROUP = "cost-check.kumo.test"


def regrouped(doc: dict, group: str = SCRATCH_GROUP) -> dict:
    """``doc`` (a CRD) as a CRD of ``group``."""
    doc = copy.deepcopy(doc)
    doc["spec"]["group"] = group
    doc["metadata"]["name"] = f"{doc['spec']['names']['plural']}.{group}"
    return doc


def dry_run_apply(docs: list[dict]) -> subprocess.CompletedProcess:
    """Server-side apply of ``docs``, judged by the API server and stored nowhere."""
    return kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=kumo-cost-check",
        "--dry-run=server",
        "-f",
        "-",
        input=yaml.safe_dump_all(docs),
        check=False,
    )


def test_the_generated_crds_are_within_the_api_servers_cel_cost_budget(crds: KubeEnv) -> None:
    """What `kumo crds` generates now (not the committed file), judged by the API
    server's own CEL cost estimator: every rule's worst case, from the bounds
    (maxItems, maxLength, maxProperties) of what it reads, must be within the per-rule
    and per-CRD budgets. Once as an update of the installed CRDs (an upgrade), once as
    new CRDs of a scratch group: an update does not judge again the rules it leaves
    unchanged."""
    docs = [doc for group in GROUPS for doc in crd_documents(group)]
    for batch in (docs, [regrouped(doc) for doc in docs]):
        proc = dry_run_apply(batch)
        assert proc.returncode == 0, proc.stderr
        for doc in batch:
            name = doc["metadata"]["name"]
            assert f"{name} serverside-applied (server dry run)" in proc.stdout, proc.stdout


def test_the_api_server_refuses_a_rule_whose_cost_it_cannot_bound(crds: KubeEnv) -> None:
    """The estimator the test above relies on is at work: the same rule, over every pair
    of a list of strings, is refused without bounds and admitted with them."""
    share = next(d for d in crd_documents() if d["spec"]["names"]["kind"] == "Share")

    def with_hosts(bounds: dict) -> dict:
        doc = regrouped(share)
        spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["properties"]["hosts"] = {"type": "array", "items": {"type": "string"}}
        spec["properties"]["hosts"].update(bounds.get("list", {}))
        spec["properties"]["hosts"]["items"].update(bounds.get("item", {}))
        spec.setdefault("x-kubernetes-validations", []).append(
            {
                "rule": "!has(self.hosts) || self.hosts.all(a, self.hosts.exists_one(b, "
                "b.startsWith(a)))",
                "message": "no host is a prefix of another",
            }
        )
        return doc

    unbounded = dry_run_apply([with_hosts({})])
    assert unbounded.returncode != 0
    assert "exceeds budget" in unbounded.stderr, unbounded.stderr
    bounded = dry_run_apply([with_hosts({"list": {"maxItems": 64}, "item": {"maxLength": 253}})])
    assert bounded.returncode == 0, bounded.stderr


def test_explain_documents_fields(crds: KubeEnv) -> None:
    out = kubectl("explain", "virtualmachine.spec.initScript").stdout
    assert "First-boot script" in out
    assert "configMapRef" in out and "Read the script from a ConfigMap key" in out
    assert "secretRef" in out and "Read the script from a Secret key" in out
    lb = kubectl("explain", "loadbalancer.spec.ports.monitors").stdout
    assert "one per pool" in lb
    # Orphan releases: the marker is swapped for kumo-orphan, not kept.
    policy = " ".join(kubectl("explain", "volume.spec.deletionPolicy").stdout.split())
    assert "replaced by `kumo-orphan=<uid>`" in policy
    surge = " ".join(kubectl("explain", "vmg.spec.strategy.maxSurge").stdout.split())
    assert "Unset: 1 (`Random`), 0 (`Ordinal`" in surge


def test_scale_subresource_and_printer_columns(namespace: str) -> None:
    kubectl(
        "apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(mutate(VMG, "metadata.name", "g"))
    )
    kubectl("scale", "vmg", "g", "-n", namespace, "--replicas=5")
    assert (
        kubectl("get", "vmg", "g", "-n", namespace, "-o", "jsonpath={.spec.replicas}").stdout == "5"
    )
    header = kubectl("get", "vmg", "-n", namespace).stdout.splitlines()[0].split()
    assert header[:5] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE"]
