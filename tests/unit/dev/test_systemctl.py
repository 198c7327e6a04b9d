"""dev/shim/systemctl, the boot-shim node's systemctl, run in a temporary directory (no
namespaces needed): it answers what kubeadm asks, and its supervisor, the node's first
process, starts a unit that exits again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.dev.conftest import SHIM

SYSTEMCTL = SHIM / "systemctl"


def until(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Node:
    def __init__(self, root: Path) -> None:
        self.units, self.run = root / "units", root / "run"
        self.units.mkdir()
        self.env = {
            "PATH": os.environ["PATH"],
            "KUMO_SHIM_UNITS": str(self.units),
            "KUMO_SHIM_RUN": str(self.run),
            "KUMO_SHIM_SCAN_SECONDS": "0.1",
        }
        self.supervisor: subprocess.Popen[bytes] | None = None

    def unit(self, name: str, enabled: bool = False, restart_seconds: int = 0) -> None:
        script = self.units / f"{name}.service"
        script.write_text("#!/bin/sh\nexec sleep 300\n")
        script.chmod(0o755)
        (self.units / f"{name}.restart-seconds").write_text(f"{restart_seconds}\n")
        if enabled:
            (self.units / f"{name}.enabled").touch()

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SYSTEMCTL), *args], env=self.env, capture_output=True, text=True
        )

    def pid(self, name: str) -> int | None:
        try:
            pid = int((self.run / f"{name}.pid").read_text())
        except (OSError, ValueError):
            return None
        return pid if Path(f"/proc/{pid}").exists() else None


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    running = Node(tmp_path)
    yield running
    if running.supervisor is not None:
        running.supervisor.send_signal(signal.SIGTERM)
        running.supervisor.wait(timeout=30)


def supervise(node: Node) -> None:
    node.supervisor = subprocess.Popen(["bash", str(SYSTEMCTL), "__supervise"], env=node.env)


def test_the_first_process_starts_enabled_units_and_again_any_that_exits(node: Node) -> None:
    node.unit("containerd", enabled=True)
    supervise(node)
    first = until("containerd started", lambda: node.pid("containerd"))
    os.kill(first, signal.SIGKILL)
    second = until("containerd started again", lambda: (node.pid("containerd") or first) != first)
    assert second and node.systemctl("is-active", "containerd").stdout == "active\n"
    assert "containerd exited; restarting it" in (node.run / "containerd.log").read_text()
    assert node.supervisor is not None
    node.supervisor.send_signal(signal.SIGTERM)  # a node stopped: its units stop with it
    node.supervisor.wait(timeout=30)
    node.supervisor = None
    until("containerd stopped", lambda: node.pid("containerd") is None)


def test_kubeadms_start_restart_and_stop_of_the_kubelet(node: Node) -> None:
    node.unit("kubelet", restart_seconds=10)
    supervise(node)
    assert node.systemctl("is-active", "kubelet").stdout == "inactive\n"
    assert node.systemctl("daemon-reload").returncode == 0
    assert node.systemctl("start", "kubelet").returncode == 0
    first = node.pid("kubelet")
    assert first is not None
    assert node.systemctl("restart", "kubelet.service").returncode == 0  # no 10 s wait
    second = node.pid("kubelet")
    assert second not in (None, first)
    assert node.systemctl("stop", "kubelet").returncode == 0
    time.sleep(0.5)  # a few supervisor scans: a stopped unit stays stopped
    assert node.pid("kubelet") is None
    assert node.systemctl("is-active", "kubelet").returncode == 3


def test_what_kubeadm_reads_of_a_unit(node: Node) -> None:
    node.unit("kubelet")
    status = node.systemctl("status", "kubelet")
    assert "Loaded: loaded" in status.stdout and status.returncode == 3  # known, not running
    missing = node.systemctl("status", "crio")
    assert "could not be found" in missing.stderr and missing.returncode == 4
    assert node.systemctl("is-enabled", "kubelet").returncode == 1
    assert node.systemctl("enable", "kubelet.service").returncode == 0
    assert node.systemctl("is-enabled", "kubelet").stdout == "enabled\n"
    assert node.systemctl("start", "crio").returncode == 5
    unsupported = node.systemctl("isolate", "rescue.target")
    assert unsupported.returncode == 1 and "'isolate' is not supported" in unsupported.stderr
