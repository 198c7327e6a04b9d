"""Take one lab daemon away for a while and bring it back, the way the lab runs it.

Why through the lab's own scripts: every daemon of the lab is started by
``start_daemon`` (dev/lib.sh) and recorded in ``.kumo-dev/pids/<name>.pid``; stopping it
with ``stop_daemon`` (TERM to its process group, KILL after a timeout) and starting it
again with the script that owns it (``dev/openstack/lab.sh start-service nova``,
``dev/kube/up.sh``) leaves the lab exactly as ``make up`` would, so ``make down`` still
stops everything and nothing is started that the lab does not know about.

The outage's length is the fault itself, so :func:`outage` holds it with a bounded
sleep; everything else waits with ``wait_until``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev"))
LIB_SH = REPO_ROOT / "dev" / "lib.sh"
LAB_SH = REPO_ROOT / "dev" / "openstack" / "lab.sh"
KUBE_UP = REPO_ROOT / "dev" / "kube" / "up.sh"
RESTART_TIMEOUT = 600.0


def _env(state: Path = STATE) -> dict[str, str]:
    return {**os.environ, "KUMO_STATE": str(state)}


def recorded_pid(name: str, state: Path = STATE) -> int | None:
    """The live PID recorded for lab daemon ``name``, else None."""
    try:
        pid = int((state / "pids" / f"{name}.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def stop_recorded_daemon(name: str, timeout: int = 30, state: Path = STATE) -> None:
    """``stop_daemon NAME`` from dev/lib.sh; refuses a daemon the lab did not start."""
    if recorded_pid(name, state) is None:
        raise RuntimeError(f"no running lab daemon {name!r} recorded in {state / 'pids'}")
    subprocess.run(
        [
            "bash",
            "-c",
            'source "$1" && stop_daemon "$2" "$3"',
            "stop",
            str(LIB_SH),
            name,
            str(timeout),
        ],
        check=True,
        env=_env(state),
        capture_output=True,
        timeout=timeout + 30,
    )


def start_nova() -> None:
    """Start what of Nova is not running (nova-api) and wait until Nova is ready."""
    _run_script(["bash", str(LAB_SH), "start-service", "nova"])


def start_kube_api() -> None:
    """dev/kube/up.sh is idempotent: it starts kube-apiserver again and waits for /readyz."""
    _run_script(["bash", str(KUBE_UP)])


def _run_script(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=RESTART_TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


@contextmanager
def outage(
    daemon: str, restart: Callable[[], None], seconds: float, state: Path = STATE
) -> Iterator[float]:
    """Stop ``daemon``; run the body (churn during the outage); keep it down until
    ``seconds`` have passed; restart it - also when the body fails. Yields the monotonic
    time the outage began."""
    stop_recorded_daemon(daemon, state=state)
    began = time.monotonic()
    try:
        yield began
        remaining = seconds - (time.monotonic() - began)
        if remaining > 0:
            time.sleep(remaining)  # the outage itself, not a wait for anything
    finally:
        restart()
