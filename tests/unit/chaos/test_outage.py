"""The outage helper's plumbing, on a dummy daemon started with dev/lib.sh's own
start_daemon in a temporary state directory (never the lab's)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.outage import LIB_SH, outage, recorded_pid, stop_recorded_daemon
from tests.integration.polling import wait_until


def start_dummy(state: Path, name: str = "dummy") -> int:
    subprocess.run(
        ["bash", "-c", 'source "$1" && start_daemon "$2" sleep 300', "start", str(LIB_SH), name],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(state), "KUMO_STATE": str(state)},
    )
    pid: int = wait_until("the dummy", lambda: recorded_pid(name, state), 10, interval=0.1)
    return pid


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for pidfile in (tmp_path / "pids").glob("*.pid"):  # never leave a dummy behind
        pid = int(pidfile.read_text())
        subprocess.run(["kill", "-KILL", f"-{pid}"], capture_output=True)


def test_stop_recorded_daemon_stops_it_and_forgets_it(state: Path) -> None:
    start_dummy(state)
    stop_recorded_daemon("dummy", timeout=5, state=state)
    assert recorded_pid("dummy", state) is None
    assert not (state / "pids" / "dummy.pid").exists()


def test_a_daemon_the_lab_did_not_start_is_refused(state: Path) -> None:
    with pytest.raises(RuntimeError, match="no running lab daemon"):
        stop_recorded_daemon("nova-api", state=state)


def test_outage_lasts_its_time_and_restarts_even_when_the_body_fails(state: Path) -> None:
    restarted: list[float] = []
    start_dummy(state)
    began = time.monotonic()
    with outage("dummy", lambda: restarted.append(time.monotonic()), 0.5, state=state) as t0:
        assert recorded_pid("dummy", state) is None  # down during the body
    assert restarted and restarted[0] - began >= 0.5 and t0 >= began

    start_dummy(state)
    with (
        pytest.raises(ZeroDivisionError),
        outage("dummy", lambda: restarted.append(time.monotonic()), 30, state=state),
    ):
        _ = 1 / 0
    assert len(restarted) == 2 and restarted[1] - began < 20  # no 30 s wait after a failure


def runs_with_other_args(state: Path, name: str, *cmd: str) -> bool:
    script = 'source "$1" && shift && runs_with_other_args "$@"'
    return (
        subprocess.run(
            ["bash", "-c", script, "check", str(LIB_SH), name, *cmd],
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(state), "KUMO_STATE": str(state)},
        ).returncode
        == 0
    )


def test_a_daemon_started_with_other_flags_is_told_apart(state: Path) -> None:
    """dev/kube/up.sh restarts the apiserver the outage test stopped, and one whose flags
    changed (the audit log): only then, since start_daemon leaves a running one alone."""
    assert not runs_with_other_args(state, "dummy", "sleep", "300"), "not running: nothing to do"
    start_dummy(state)
    assert not runs_with_other_args(state, "dummy", "sleep", "300")
    assert runs_with_other_args(state, "dummy", "sleep", "301")
    assert runs_with_other_args(state, "dummy", "sleep", "300", "--audit-log-path=x")
    assert runs_with_other_args(state, "dummy", "sleep")
    assert not runs_with_other_args(state, "dummy", "/opt/kube/kube-apiserver", "300"), (
        "a PID that runs another program is not the daemon (a stale pidfile): never stopped"
    )
    assert runs_with_other_args(state, "dummy", "/usr/bin/sleep", "300"), "same program"
    stop_recorded_daemon("dummy", timeout=5, state=state)
