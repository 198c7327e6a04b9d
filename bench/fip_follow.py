"""`make bench-fip`: how long a FloatingIP takes to follow its VirtualMachine through a
server deleted out of band, beside the same repair of a VM without an address.

    python -m bench fip-follow [--deletes 8] [--drift-seconds 3]

One `kumo run` of this checkout (``KumoRun``) in its own namespace of the `kumo-bench`
project holds two standalone VMs: ``kbench-fip-vm``, which a FloatingIP points at, and
``kbench-plain-vm``, which has no address (the baseline: the VM's own repair). Each
round deletes one VM's server with openstacksdk, then the other's, the order swapped
every round; a sample is the seconds from the delete until

* the VM is Ready on a new server (both VMs), and
* for the first, Neutron has the floating IP on a port of that new server.

The latency bound the integration test once asserted (interval + build + 2 s) is this
bench's to measure: the p50/p95 of both, and their ratios, in the same run. The samples
are kept in ``.kumo-dev/bench/fip-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench import lab, report
from bench.contenders import KumoRun
from bench.lab import FLAVOR, IMAGE, NETWORK, PREFIX, say, wait_for

FIP_VM = f"{PREFIX}-fip-vm"
PLAIN_VM = f"{PREFIX}-plain-vm"
FIP = f"{PREFIX}-fip"
#: The floating IP's description: it has no name, and lab.sweep finds it by this prefix.
DESCRIPTION = f"{PREFIX} fip-follow"
#: The harness's polls while timing a repair (Kubernetes, then Neutron for the address).
POLL_SECONDS = 0.25
#: Seconds one repair may take before the run fails.
REPAIR_TIMEOUT = 600.0
#: Seconds the teardown's delete may take (two VMs and an address).
DELETE_TIMEOUT = 600.0


@dataclass(frozen=True)
class Sample:
    """One out-of-band delete: seconds until the VM was Ready on a new server, and until
    the work was done (the address on that server; the same for the plain VM)."""

    vm: str
    ready_s: float
    done_s: float


def vm_body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"image": IMAGE, "flavor": FLAVOR, "networks": [NETWORK]},
    }


def fip_body(vm: str) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "FloatingIP",
        "metadata": {"name": FIP},
        "spec": {"description": DESCRIPTION, "virtualMachineRef": vm},
    }


def schedule(deletes: int) -> list[str]:
    """The VMs in the order their servers are deleted: each round both, the first of the
    round alternating, so neither always runs right after the other's repair."""
    out: list[str] = []
    for i in range(deletes):
        pair = [FIP_VM, PLAIN_VM] if i % 2 == 0 else [PLAIN_VM, FIP_VM]
        out += pair
    return out


def server_of(body: dict[str, Any] | None) -> str | None:
    """The server a VM object records."""
    return ((body or {}).get("status") or {}).get("id") or None


def on_new_server(body: dict[str, Any] | None, old: str) -> str | None:
    """The VM's new server once it is Ready on one other than ``old``."""
    server = server_of(body)
    return server if server and server != old and lab.is_ready(body or {}) else None


def fip_port(conn: Any, fip_id: str) -> str | None:
    """The port Neutron has the floating IP on (None: not associated, or gone)."""
    response = conn.network.get(f"/floatingips/{fip_id}")
    if response.status_code == 404:
        return None
    return response.json()["floatingip"].get("port_id") or None


def address_on(conn: Any, fip_id: str, server: str) -> bool:
    """Whether Neutron has the floating IP on a port of ``server``."""
    port = fip_port(conn, fip_id)
    return bool(port) and port in {p.id for p in conn.network.ports(device_id=server)}


class Follow:
    """Times the repairs of one `kumo run`'s two VMs (its kube client and connection)."""

    def __init__(
        self,
        kube: Any,
        conn: Any,
        namespace: str,
        clock: Callable[[], float] = time.monotonic,
        poll: float = POLL_SECONDS,
    ) -> None:
        self.kube = kube
        self.conn = conn
        self.namespace = namespace
        self.clock = clock
        self.poll = poll
        self.fip_id = ""

    def vm(self, name: str) -> dict[str, Any] | None:
        path = f"/apis/kumo.dev/v1alpha1/namespaces/{self.namespace}/virtualmachines/{name}"
        return self.kube.get(path)  # type: ignore[no-any-return]

    def fip(self) -> dict[str, Any] | None:
        path = f"/apis/kumo.dev/v1alpha1/namespaces/{self.namespace}/floatingips/{FIP}"
        return self.kube.get(path)  # type: ignore[no-any-return]

    def create(self) -> None:
        """Both VMs and the FloatingIP; back when both are Ready and the address is on
        the first VM's server."""
        for name in (FIP_VM, PLAIN_VM):
            self.kube.create("virtualmachines", self.namespace, vm_body(name))
        self.kube.create("floatingips", self.namespace, fip_body(FIP_VM))

        def ready() -> bool:
            vms = [self.vm(name) for name in (FIP_VM, PLAIN_VM)]
            if not all(body and lab.is_ready(body) for body in vms):
                return False
            fip = self.fip() or {}
            self.fip_id = (fip.get("status") or {}).get("id") or ""
            server = server_of(vms[0])
            return bool(self.fip_id and server and address_on(self.conn, self.fip_id, server))

        wait_for("both VMs Ready, the address on the first", ready, REPAIR_TIMEOUT, self.poll)

    def repair(self, name: str) -> Sample:
        """Delete the VM's server out of band; time its repair (and the address's)."""
        old = server_of(self.vm(name))
        if old is None:
            raise RuntimeError(f"VM {name} records no server")
        self.conn.compute.delete_server(old)
        t0 = self.clock()
        marks: dict[str, float] = {}

        def done() -> bool:
            new = on_new_server(self.vm(name), old)
            if new is None:
                return False
            marks.setdefault("ready", self.clock() - t0)
            return name != FIP_VM or address_on(self.conn, self.fip_id, new)

        wait_for(f"VM {name} repaired", done, REPAIR_TIMEOUT, self.poll)
        return Sample(name, marks["ready"], self.clock() - t0)

    def rounds(self, deletes: int) -> list[Sample]:
        samples = []
        for i, name in enumerate(schedule(deletes)):
            sample = self.repair(name)
            say(
                f"delete {i + 1}/{2 * deletes} ({name}): Ready on a new server "
                f"{sample.ready_s:.1f}s, done {sample.done_s:.1f}s"
            )
            samples.append(sample)
        return samples


# --- the report ------------------------------------------------------------------------------


def _seconds(samples: Sequence[Sample], vm: str, attr: str) -> list[float]:
    return [getattr(s, attr) for s in samples if s.vm == vm]


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b and not math.isnan(a + b) else "—"


def _s(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.1f}"


def table(samples: Sequence[Sample]) -> str:
    """p50/p95/max per measure, then the ratios of the address's follow to the plain
    VM's own repair (p50 to p50, p95 to p95)."""
    measures = [
        ("VM with the address: address on the new server", FIP_VM, "done_s"),
        ("VM with the address: Ready on the new server", FIP_VM, "ready_s"),
        ("VM without an address: Ready on the new server", PLAIN_VM, "ready_s"),
    ]
    body = []
    for label, vm, attr in measures:
        values = _seconds(samples, vm, attr)
        body.append(
            [
                label,
                str(len(values)),
                _s(report.percentile(values, 50)),
                _s(report.percentile(values, 95)),
                _s(max(values, default=math.nan)),
            ]
        )
    follow, plain = _seconds(samples, FIP_VM, "done_s"), _seconds(samples, PLAIN_VM, "ready_s")
    ratios = [
        [
            "address / VM without (ratio)",
            "",
            _ratio(report.percentile(follow, 50), report.percentile(plain, 50)),
            _ratio(report.percentile(follow, 95), report.percentile(plain, 95)),
            "",
        ]
    ]
    header = ["measure", "deletes", "p50 s", "p95 s", "max s"]
    return report.format_table(header, body, ratios)


def extra_lines(samples: Sequence[Sample]) -> list[str]:
    """What following the address adds to its VM's own repair, per delete."""
    after = [s.done_s - s.ready_s for s in samples if s.vm == FIP_VM]
    if not after:
        return []
    p50, p95 = report.percentile(after, 50), report.percentile(after, 95)
    return [f"address after its VM was Ready: {p50:.1f}/{p95:.1f} s p50/p95 ({len(after)} deletes)"]


# --- the command ----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--deletes", type=int, default=8, help="out-of-band deletes per VM")
    parser.add_argument("--drift-seconds", type=float, default=3.0, help="kumo run --drift-seconds")
    parser.add_argument("--no-lock", action="store_true", help="the caller holds the lab lock")


def run(args: argparse.Namespace) -> None:
    from bench.stack import RESULTS, kumo_commit, lab_lock, single_operator

    stamp = time.strftime("%Y%m%d-%H%M%S")
    commit = kumo_commit()
    with lab_lock(args.no_lock):
        kube, hconn = lab.Kube(), lab.CountingConnection()
        lab.sweep(hconn.conn)  # a previous run's leftovers
        with single_operator(kube):
            kumo = KumoRun(2, kube, hconn, args.drift_seconds)
            try:
                kumo.setup()
                kumo.start()
                follow = Follow(kube, hconn.conn, kumo.namespace)
                follow.create()
                samples = follow.rounds(args.deletes)
                kumo.delete(standalone=True, timeout=DELETE_TIMEOUT)
            finally:
                kumo.teardown(standalone=True, timeout=DELETE_TIMEOUT)
                lab.sweep(hconn.conn)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"fip-{stamp}.json"
    out.write_text(
        json.dumps(
            {"commit": commit, "args": vars(args), "samples": [asdict(s) for s in samples]},
            indent=1,
        )
    )
    print()
    print(f"Kumo commit {commit}; {time.strftime('%Y-%m-%d %H:%M')}; details: {out}")
    print(table(samples))
    for line in extra_lines(samples):
        print(line)
