"""The boot shim on the lab (issue 42, deliverable 3; dev/shim/, docs/clusters.md): the
fake Nova's servers become real kubeadm nodes.

The module starts the shim (dev/shim/up.sh) and stops it at its end. It makes, in
kumo-demo, what a KumoCluster and its KumoMachines would (not Kumo's objects: the
provider and the shim are joined in a later step): an Octavia load balancer on 6443 with
an explicit VIP (the no-op network driver gives every load balancer the same address
otherwise), a control-plane server and a worker whose user data is laid out as CAPI
v1.14.2's kubeadm bootstrap lays it out (jinja header, write_files, runcmd with the
sentinel), with the shim's metadata. It checks that both nodes are Ready with the
providerIDs their user data names, that the VIP forwards only to the members Octavia
serves, that a unit that exits is started again, that a restarted shim adopts the nodes,
that other cloud-init is refused by name, and that a deleted server's node and disk go.

Run by ``make test-clusters`` (KUMO_TEST_CLUSTERS=1); ``make test`` does not collect it.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import json
import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import condition
from tests.integration.polling import wait_until

pytestmark = pytest.mark.clusters

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "dev" / "shim"
STATE = Path(os.environ.get("KUMO_STATE", REPO / ".kumo-dev"))
NODES = STATE / "shim" / "nodes"
KEY = "kumo.dev:boot-shim"
REGISTRY = "registry.kumo.lab"
#: Seconds a node may take to be Ready on the busy 2-core lab (images imported, kubeadm).
BOOT_TIMEOUT = 900


def sh(*args: str | Path, timeout: float = 1800) -> str:
    done = subprocess.run(
        ["bash", *map(str, args)], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"{args} failed ({done.returncode}):\n{done.stderr[-4000:]}", pytrace=False)
    return done.stdout.strip()


def status() -> dict[str, Any]:
    return dict(json.loads((STATE / "shim" / "status.json").read_text()))


def node(server_id: str) -> dict[str, Any]:
    return dict(status()["nodes"].get(server_id) or {})


@pytest.fixture(scope="module")
def shim(openstack_lab: str) -> Iterator[None]:
    sh(SHIM / "up.sh")
    yield
    sh(SHIM / "down.sh", timeout=300)


# --- the workload cluster's credentials --------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca_pem: str
    ca_key_pem: str
    ca_hash: str  # kubeadm's discovery hash of the CA's public key
    files: Path  # ca.crt, admin.crt, admin.key for the test's client


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A cluster CA as CAPI makes one (kubeadm makes the rest from it) and an admin
    client certificate of it for the test."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    def cert(subject: x509.Name, key: Any, issuer: x509.Name, signer: Any, ca: bool) -> Any:
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        return builder.sign(signer, hashes.SHA256())

    def pem(key: Any) -> bytes:
        return key.private_bytes(  # type: ignore[no-any-return]
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    ca = cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    admin_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    admin_name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
            x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes-admin"),
        ]
    )
    admin = cert(admin_name, admin_key, ca_name, ca_key, ca=False)
    files = tmp_path_factory.mktemp("pki")
    (files / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (files / "admin.crt").write_bytes(admin.public_bytes(serialization.Encoding.PEM))
    (files / "admin.key").write_bytes(pem(admin_key))
    spki = ca.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return Pki(
        (files / "ca.crt").read_text(),
        pem(ca_key).decode(),
        "sha256:" + hashlib.sha256(spki).hexdigest(),
        files,
    )


class Api:
    """The workload cluster's API through the VIP, as its admin."""

    def __init__(self, vip: str, pki: Pki) -> None:
        self.url = f"https://{vip}:6443"
        self.ctx = ssl.create_default_context(cafile=str(pki.files / "ca.crt"))
        self.ctx.load_cert_chain(str(pki.files / "admin.crt"), str(pki.files / "admin.key"))

    def get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + path, context=self.ctx, timeout=10) as r:
            return dict(json.loads(r.read()))

    def answers(self) -> bool:
        try:
            return bool(self.get("/version"))
        except OSError:
            return False

    def ready_nodes(self) -> dict[str, dict[str, Any]]:
        items = self.get("/api/v1/nodes")["items"]
        return {n["metadata"]["name"]: n for n in items if condition(n).get("status") == "True"}


# --- CAPI-shaped user data --------------------------------------------------------------------


def user_data(kubeadm: str, config_path: str, command: str, pki: Pki | None) -> str:
    """Laid out as CAPI v1.14.2's templates lay it out: a control plane's with the
    cluster CA (its key in base64: the shim decodes every encoding cloud-init names), a
    worker's without (kubeadm join refuses a node that has a CA already)."""

    def file(path: str, content: str, encoding: str = "") -> str:
        body = "\n".join("      " + line for line in content.splitlines())
        enc = f'    encoding: "{encoding}"\n' if encoding else ""
        return f"-   path: {path}\n{enc}    owner: root:root\n    permissions: '0640'\n    content: |\n{body}\n"

    files = ""
    if pki is not None:
        key = base64.b64encode(pki.ca_key_pem.encode()).decode()
        files += file("/etc/kubernetes/pki/ca.crt", pki.ca_pem)
        files += file("/etc/kubernetes/pki/ca.key", key, "base64")
    files += file(config_path, kubeadm)
    files += file(
        "/run/cluster-api/placeholder", "This placeholder file is used to create /run/cluster-api"
    )
    return (
        "## template: jinja\n#cloud-config\n\nwrite_files:\n" + files + "runcmd:\n"
        f"  - '{command} && echo success > /run/cluster-api/bootstrap-success.complete'\n"
    )


def registration() -> str:
    return (
        "nodeRegistration:\n  name: '{{ ds.meta_data.local_hostname }}'\n"
        "  criSocket: unix:///var/run/containerd/containerd.sock\n"
        "  ignorePreflightErrors: [SystemVerification]\n  kubeletExtraArgs:\n"
        "  - name: provider-id\n    value: openstack:///{{ ds.meta_data.instance_id }}\n"
    )


@dataclass
class Cluster:
    conn: Any
    vip: str
    lb: Any
    pool: Any
    member: Any
    cp: str
    worker: str
    api: Api


def create_server(conn: Any, name: str, data: str) -> str:
    image = conn.image.find_image("centos79", ignore_missing=False)
    flavor = conn.compute.find_flavor("m1.small", ignore_missing=False)
    net = conn.network.find_network("kumo-demo-net", ignore_missing=False)
    server = conn.compute.create_server(
        name=name,
        image_id=image.id,
        flavor_id=flavor.id,
        networks=[{"uuid": net.id}],
        metadata={KEY: "true"},
        user_data=base64.b64encode(data.encode()).decode(),
    )
    return str(server.id)


def running(server_id: str) -> dict[str, Any] | None:
    found = node(server_id)
    return found if found.get("state") == "running" else None


def gone(conn: Any, server_id: str) -> bool:
    return conn.compute.find_server(server_id, ignore_missing=True) is None and not (
        server_id in status()["nodes"] or (NODES / server_id).exists()
    )


@pytest.fixture(scope="module")
def cluster(shim: None, demo_conn: Any, pki: Pki) -> Iterator[Cluster]:
    conn, run = demo_conn, uuid.uuid4().hex[:6]
    lbs = conn.load_balancer
    subnet = conn.network.find_subnet("kumo-demo-subnet", ignore_missing=False)
    # The VIP's address is held by a port of its own, so no server is given it.
    hold = conn.network.create_port(name=f"shim-vip-{run}", network_id=subnet.network_id)
    vip = hold.fixed_ips[0]["ip_address"]
    lb = lbs.create_load_balancer(name=f"shim-{run}", vip_subnet_id=subnet.id, vip_address=vip)

    def lb_active() -> bool:
        return bool(lbs.get_load_balancer(lb.id).provisioning_status == "ACTIVE")

    servers: list[str] = []
    try:
        wait_until("the LB ACTIVE", lb_active, 120)
        assert lbs.get_load_balancer(lb.id).vip_address == vip, "the no-op driver kept the VIP"
        listener = lbs.create_listener(protocol="TCP", protocol_port=6443, load_balancer_id=lb.id)
        wait_until("the LB ACTIVE", lb_active, 120)
        pool = lbs.create_pool(protocol="TCP", lb_algorithm="ROUND_ROBIN", listener_id=listener.id)
        wait_until("the LB ACTIVE", lb_active, 120)

        version = sh(REPO / "dev/kube/build.sh")
        version = subprocess.run(
            [f"{version}/kubelet", "--version"], capture_output=True, text=True, check=True
        ).stdout.split()[1]
        token = f"{secrets.token_hex(3)}.{secrets.token_hex(8)}"
        init = (
            "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
            f"kubernetesVersion: {version}\ncontrolPlaneEndpoint: {vip}:6443\n"
            f"imageRepository: {REGISTRY}\nclusterName: shim-{run}\n"
            "proxy: {disabled: true}\ndns: {disabled: true}\n"
            "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"
            f"bootstrapTokens:\n- token: {token}\n  ttl: 2h0m0s\n" + registration()
        )
        cp_data = user_data(
            init,
            "/run/kubeadm/kubeadm.yaml",
            "kubeadm init --config /run/kubeadm/kubeadm.yaml",
            pki,
        )
        started = time.monotonic()
        servers.append(create_server(conn, f"shim-cp-{run}", cp_data))
        cp_node = wait_until("the control plane's node", lambda: running(servers[0]), 300)
        member = lbs.create_member(
            pool, address=cp_node["address"], protocol_port=6443, subnet_id=subnet.id
        )
        wait_until("the LB ACTIVE", lb_active, 120)
        api = Api(vip, pki)
        wait_until("the API through the VIP", api.answers, BOOT_TIMEOUT, interval=2)
        print(f"control plane's API through the VIP {time.monotonic() - started:.0f}s after create")

        join = (
            "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"
            f"discovery:\n  bootstrapToken:\n    apiServerEndpoint: {vip}:6443\n"
            f"    token: {token}\n    caCertHashes: ['{pki.ca_hash}']\n" + registration()
        )
        config = "/run/kubeadm/kubeadm-join-config.yaml"
        worker_data = user_data(join, config, f"kubeadm join --config {config}", None)
        started = time.monotonic()
        servers.append(create_server(conn, f"shim-md-{run}", worker_data))
        wait_until(
            "both nodes Ready", lambda: len(api.ready_nodes()) == 2, BOOT_TIMEOUT, interval=2
        )
        print(f"worker Ready {time.monotonic() - started:.0f}s after create")
        yield Cluster(conn, vip, lb, pool, member, servers[0], servers[1], api)
    finally:
        for server in servers:
            conn.compute.delete_server(server, ignore_missing=True)
        lbs.delete_load_balancer(lb, cascade=True, ignore_missing=True)
        for server in servers:
            wait_until(
                f"server {server} and its node gone", functools.partial(gone, conn, server), 300
            )
        conn.network.delete_port(hold, ignore_missing=True)


def test_both_nodes_are_ready_with_the_provider_ids_their_user_data_names(
    cluster: Cluster,
) -> None:
    ready = cluster.api.ready_nodes()
    for server in (cluster.cp, cluster.worker):
        hostname = node(server)["hostname"]
        assert ready[hostname]["spec"]["providerID"] == f"openstack:///{server}"
    for server in (cluster.cp, cluster.worker):
        print(f"node of {server}: {node(server)}")  # CPU-s and RSS so far (docs/clusters.md)


def test_the_vip_forwards_only_to_members_octavia_serves(cluster: Cluster) -> None:
    lbs = cluster.conn.load_balancer

    def weigh(weight: int) -> None:
        lbs.update_member(cluster.member, cluster.pool, weight=weight)
        wait_until(
            "the LB ACTIVE",
            lambda: lbs.get_load_balancer(cluster.lb.id).provisioning_status == "ACTIVE",
            120,
        )

    weigh(0)  # drained: the VIP has no member left, an outage
    wait_until("the VIP refuses", lambda: not cluster.api.answers(), 30)
    weigh(1)
    wait_until("the VIP answers again", cluster.api.answers, 30)


def test_a_unit_that_exits_is_started_again_by_the_nodes_first_process(
    cluster: Cluster,
) -> None:
    pid_file = NODES / cluster.worker / "units" / "kubelet.pid"
    first = int(pid_file.read_text())
    os.kill(first, signal.SIGKILL)

    def restarted() -> int | None:
        pid = int(pid_file.read_text() or 0)
        return pid if pid != first and Path(f"/proc/{pid}").exists() else None

    wait_until("the worker's kubelet started again", restarted, 60)
    hostname = node(cluster.worker)["hostname"]
    wait_until("the worker Ready", lambda: hostname in cluster.api.ready_nodes(), 120)


def test_a_restarted_shim_adopts_the_nodes_that_run(cluster: Cluster) -> None:
    before = {s: node(s)["pid"] for s in (cluster.cp, cluster.worker)}
    sh(SHIM / "down.sh", "--keep-nodes", timeout=300)
    sh(SHIM / "up.sh")
    after = status()["nodes"]
    assert {s: after[s]["pid"] for s in before} == before
    assert all(after[s]["adopted"] for s in before)
    wait_until("the VIP served again", cluster.api.answers, 30)


def test_cloud_init_beyond_the_subset_is_refused_by_name(shim: None, demo_conn: Any) -> None:
    server = create_server(
        demo_conn, f"shim-refused-{uuid.uuid4().hex[:6]}", "#cloud-config\nntp:\n  enabled: true\n"
    )
    try:
        refusal = wait_until(
            "the shim's refusal", lambda: status()["refused"].get(server), 120, interval=1
        )
        assert "not supported by the boot shim: ntp" in refusal
        assert not (NODES / server).exists()
    finally:
        demo_conn.compute.delete_server(server, ignore_missing=True)


def test_a_deleted_server_loses_its_node_and_its_disk(cluster: Cluster) -> None:
    """Last: the worker goes for good."""
    pid, namespace = node(cluster.worker)["pid"], f"ks-{cluster.worker[:8]}"
    cluster.conn.compute.delete_server(cluster.worker)
    wait_until("the worker's node and disk gone", lambda: gone(cluster.conn, cluster.worker), 300)
    assert not Path(f"/proc/{pid}").exists()
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert namespace not in netns
