"""What the real-stack benchmark needs from the lab: paths, an OpenStack connection to the
`kumo-bench` project, a tiny Kubernetes REST client, /proc sampling, the operator that
`make up` runs, and a sweep that removes every cloud resource a run created.

Everything a benchmark creates is named with ``PREFIX`` (servers, server groups, LBs,
stacks, DNS recordsets, the Kumo namespace; a floating IP's description starts with it),
so the sweep can find it after a crash or Ctrl-C without touching anything else in the
project.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[1]
STATE = Path(os.environ.get("KUMO_STATE", ROOT / ".kumo-dev"))
LOGS = STATE / "logs"
CLOUDS_YAML = STATE / "clouds.yaml"
CLOUD = "kumo-bench"
PREFIX = "kbench"
IMAGE = "centos79"
FLAVOR = "m1.tiny"
NETWORK = "kumo-bench-net"
SUBNET = "kumo-bench-subnet"
#: The Designate zone the lab makes for kumo-bench, owned by that project
#: (dev/openstack/services/designate.sh: designate_cloud_setup, one `<project>.test.`
#: per lab project); the fleet's DNSRecords publish into it.
ZONE = "kumo-bench.test."

T = TypeVar("T")


def say(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 1.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


# --- OpenStack -----------------------------------------------------------------------

#: Ports of the lab's endpoints → service name, to count the harness's own requests.
PORTS = {
    8774: "nova",
    9696: "neutron",
    9876: "octavia",
    9292: "glance",
    5000: "keystone",
    8778: "placement",
    9001: "designate",
    8004: "heat",
    8776: "cinder",
}


class CountingConnection:
    """An openstacksdk connection whose requests are counted per service (by port).

    The harness's own reads (checking convergence, timing repairs) land in the same
    request logs as the contender's; their counts are subtracted from each window.
    """

    def __init__(self, cloud: str = CLOUD) -> None:
        import openstack  # the venv's; imported here so the pure modules need none

        os.environ["OS_CLIENT_CONFIG_FILE"] = str(CLOUDS_YAML)
        self.conn = openstack.connect(cloud=cloud)
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.conn.session.session.hooks["response"].append(self._hook)

    def _hook(self, response: Any, *args: Any, **kwargs: Any) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(response.request.url)
        if parts.path in ("", "/"):
            return
        service = PORTS.get(parts.port or 80, "other")
        with self._lock:
            self.counts[service] = self.counts.get(service, 0) + 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)


def connect(cloud: str = CLOUD) -> Any:
    """A plain openstacksdk connection (the contenders' own)."""
    import openstack

    os.environ["OS_CLIENT_CONFIG_FILE"] = str(CLOUDS_YAML)
    return openstack.connect(cloud=cloud)


def leftovers(conn: Any) -> dict[str, list[str]]:
    """Every benchmark resource still in the project (by name prefix). A server Nova lists
    as ``DELETED`` is gone: under load Nova keeps such records in its listing for minutes
    after the delete (vm_state set, row not yet marked deleted), and they are not live."""
    return {
        "servers": [
            s.id
            for s in conn.compute.servers()
            if (s.name or "").startswith(PREFIX) and s.status != "DELETED"
        ],
        "server_groups": [
            g.id for g in conn.compute.server_groups() if (g.name or "").startswith(PREFIX)
        ],
        "load_balancers": [
            lb.id
            for lb in conn.load_balancer.load_balancers()
            if (lb.name or "").startswith(PREFIX)
        ],
        "volumes": [
            v.id for v in conn.block_storage.volumes() if (v.name or "").startswith(PREFIX)
        ],
        # A floating IP has no name: the bench's start their description with PREFIX.
        "floating_ips": [
            ip.id for ip in conn.network.ips() if (ip.description or "").startswith(PREFIX)
        ],
        "recordsets": [  # "<zone id>/<recordset id>": the delete needs both
            f"{zone.id}/{rs.id}"
            for zone in conn.dns.zones()
            for rs in conn.dns.recordsets(zone)
            if (rs.name or "").startswith(PREFIX)
        ],
    }


def sweep(conn: Any, timeout: float = 600) -> None:
    """Delete every benchmark resource in the project and wait until none is left."""
    try:
        for stack in conn.orchestration.stacks():
            if stack.name.startswith(PREFIX):
                conn.orchestration.delete_stack(stack)
    except Exception:  # Heat not installed: no stacks
        pass
    left = leftovers(conn)
    if not any(left.values()):
        return
    say(f"sweeping leftovers: { {k: len(v) for k, v in left.items()} }")
    for lb in left["load_balancers"]:
        try:
            conn.load_balancer.delete_load_balancer(lb, cascade=True, ignore_missing=True)
        except Exception as error:  # PENDING_*: retried below
            say(f"  LB {lb}: {error}")
    for server in left["servers"]:
        conn.compute.delete_server(server, ignore_missing=True)
    for ip in left["floating_ips"]:
        conn.network.delete_ip(ip, ignore_missing=True)

    def gone() -> bool:
        now = leftovers(conn)
        for lb in now["load_balancers"]:
            with contextlib.suppress(Exception):
                conn.load_balancer.delete_load_balancer(lb, cascade=True, ignore_missing=True)
        for ref in now["recordsets"]:  # a refused delete is retried at the next check
            zone_id, rs_id = ref.split("/", 1)
            with contextlib.suppress(Exception):
                conn.dns.delete_recordset(rs_id, zone_id, ignore_missing=True)
        if not now["servers"]:
            for group in now["server_groups"]:
                conn.compute.delete_server_group(group, ignore_missing=True)
            for volume in now["volumes"]:  # detached once their servers are gone
                with contextlib.suppress(Exception):  # still detaching: retried
                    conn.block_storage.delete_volume(volume, ignore_missing=True)
        return not any(now.values())

    wait_for("benchmark resources deleted", gone, timeout, interval=3)


# --- Kubernetes ----------------------------------------------------------------------


class Kube:
    """A minimal REST client with the lab's admin kubeconfig (no kubectl start-ups while
    timing: each costs ~0.2 CPU s on two cores)."""

    def __init__(self, kubeconfig: Path = STATE / "kubeconfig") -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server = cluster["server"].rstrip("/")
        self.token = config["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )

    def request(self, method: str, path: str, body: Any = None, ctype: str = "") -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", ctype or "application/json")
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code == 404 and method in ("GET", "DELETE", "PATCH"):
                return None  # gone already (a teardown races the objects' own deletion)
            raise RuntimeError(f"{method} {path}: {error.code} {error.read()[:300]!r}") from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def items(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        out = self.get(f"/apis/kumo.dev/v1alpha1/namespaces/{namespace}/{plural}")
        return list((out or {}).get("items") or [])

    def create(self, plural: str, namespace: str, body: dict[str, Any]) -> Any:
        return self.request(
            "POST", f"/apis/kumo.dev/v1alpha1/namespaces/{namespace}/{plural}", body
        )

    def patch(self, plural: str, namespace: str, name: str, patch: dict[str, Any]) -> Any:
        return self.request(
            "PATCH",
            f"/apis/kumo.dev/v1alpha1/namespaces/{namespace}/{plural}/{name}",
            patch,
            "application/merge-patch+json",
        )

    def delete_all(self, plural: str, namespace: str) -> None:
        self.request("DELETE", f"/apis/kumo.dev/v1alpha1/namespaces/{namespace}/{plural}")

    def create_namespace(self, name: str) -> None:
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})

    def delete_namespace(self, name: str) -> None:
        self.request("DELETE", f"/api/v1/namespaces/{name}")

    def namespaces(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.get("/api/v1/namespaces")["items"]]

    def lease_holder(self) -> str:
        lease = self.get("/apis/coordination.k8s.io/v1/namespaces/kumo-system/leases/kumo")
        return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""

    def watch(self, plural: str, namespace: str) -> Watched:
        """Kumo's ``plural`` objects in ``namespace``, kept current by a watch (see
        :class:`Watched`)."""
        return Watched(self, f"/apis/kumo.dev/v1alpha1/namespaces/{namespace}/{plural}")


class Watched:
    """One list, then a watch stream, of the objects at ``path``, kept by name in a
    thread. A harness that polls Kumo's objects with a LIST each second loads the
    apiserver on the cores it measures: 316 LISTs of 100 VMs in one 330-s converge
    (2026-11-28). A watch sends each change once. After an error the thread lists again.
    """

    def __init__(self, kube: Kube, path: str) -> None:
        self.kube = kube
        self.path = path
        self._items: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.synced = threading.Event()
        """Set once the first list is in."""
        self._thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)
        self._thread.start()

    def items(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items.values())

    def close(self) -> None:
        """Stop at the stream's next event or timeout (a daemon thread: never waited on)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                listed = self.kube.get(self.path) or {}
                with self._lock:
                    self._items = {i["metadata"]["name"]: i for i in listed.get("items") or []}
                self.synced.set()
                self._stream(str((listed.get("metadata") or {}).get("resourceVersion") or ""))
            except Exception as error:  # a reset or timeout: list again
                if not self._stop.is_set():
                    say(f"watch {self.path}: {type(error).__name__}: {error}; listing again")
            self._stop.wait(0.5)

    def _stream(self, version: str) -> None:
        query = f"watch=1&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion={version}"
        req = urllib.request.Request(f"{self.kube.server}{self.path}?{query}")
        req.add_header("Authorization", f"Bearer {self.kube.token}")
        with urllib.request.urlopen(req, context=self.kube.ctx, timeout=660) as resp:
            for line in resp:
                if self._stop.is_set():
                    return
                event = json.loads(line)
                kind, body = event.get("type"), event.get("object") or {}
                if kind == "ERROR":  # e.g. 410 Gone: the version is too old
                    raise RuntimeError(str(body.get("message") or body))
                if kind == "BOOKMARK":
                    continue
                name = body["metadata"]["name"]
                with self._lock:
                    if kind == "DELETED":
                        self._items.pop(name, None)
                    else:
                        self._items[name] = body


def is_ready(body: dict[str, Any]) -> bool:
    for c in (body.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


# --- processes -----------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def proc_status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def readyz(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as error:
        return json.loads(error.read())  # type: ignore[no-any-return]
    except OSError:
        return {}


def metrics(port: int) -> dict[str, float]:
    """Prometheus samples summed per metric name."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        with contextlib.suppress(ValueError):
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def dev_operator(action: str) -> bool:
    """`dev/operator.sh start|stop|status` — the operator `make up` runs, through the
    checkout that owns the lab state (a worktree's .kumo-dev is a link to the main
    checkout's), without our PYTHONPATH: restarted exactly as `make up` started it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KUMO_ROOT")}
    checkout = STATE.resolve().parent
    script = checkout / "dev" / "operator.sh"
    if not script.exists():
        script = ROOT / "dev" / "operator.sh"
    done = subprocess.run(["bash", str(script), action], env=env, check=False)
    return done.returncode == 0
