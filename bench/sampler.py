"""CPU and RSS over time, from /proc: Kumo's process and the lab's service processes.

The lab's services are found by their pid files (`.kumo-dev/pids/<name>.pid`, written by
dev/openstack/lab.sh and dev/kube/*.sh); a service's CPU is its process and all its
descendants (uwsgi and eventlet workers). Names are grouped by their first word
(`nova-compute-1` and `nova-api` count as `nova`). One sample a second in a thread; the
series are cumulative CPU seconds, turned into cores over time by ``rates``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from bench import lab

PIDS = lab.STATE / "pids"


def service_of(pidfile: str) -> str:
    """`nova-compute-1.pid` → `nova`; `kube-apiserver.pid` → `kube`."""
    return pidfile.removesuffix(".pid").split("-", 1)[0]


def pidfiles(pids_dir: Path = PIDS) -> dict[str, int]:
    """Each lab process's pid by its pid file's name (`nova-compute-1`); unreadable ones
    are left out."""
    out: dict[str, int] = {}
    for f in sorted(pids_dir.glob("*.pid")) if pids_dir.is_dir() else []:
        try:
            out[f.name.removesuffix(".pid")] = int(f.read_text().split()[0])
        except (ValueError, IndexError, OSError):
            continue
    return out


def service_pids(pids_dir: Path = PIDS, skip: Sequence[str] = ("kumo",)) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for name, pid in pidfiles(pids_dir).items():
        service = service_of(name)
        if service not in skip:  # make up's operator is paused during a run
            out[service].append(pid)
    return dict(out)


def processes_cpu(pids: Mapping[str, Iterable[int]]) -> dict[str, float]:
    """Cumulative CPU seconds of each named group of processes, each with all its
    descendants (uwsgi and eventlet workers), from one scan of /proc."""
    kids = _children()
    return {name: sum(_tree_cpu(p, kids) for p in group) for name, group in pids.items()}


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids[ppid].append(int(entry.name))
    return kids


def _tree_cpu(pid: int, kids: dict[int, list[int]]) -> float:
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            total += lab.proc_cpu_seconds(p)
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(kids.get(p, ()))
    return total


def rates(times: Sequence[float], cumulative: Sequence[float]) -> list[float]:
    """Cores used between consecutive samples of a cumulative CPU-seconds series (one
    value fewer than samples; a process restart's drop is clamped to 0)."""
    return [
        max(0.0, (c1 - c0) / (t1 - t0)) if t1 > t0 else 0.0
        for t0, t1, c0, c1 in zip(times, times[1:], cumulative, cumulative[1:], strict=False)
    ]


class Sampler:
    """Samples, each second: t (s since start), Kumo's CPU seconds and RSS MiB, and each
    lab service's CPU seconds. ``phase(name)`` marks where a phase starts (plots)."""

    def __init__(self, kumo_pid: Callable[[], int | None], interval: float = 1.0) -> None:
        self.kumo_pid = kumo_pid
        self.interval = interval
        self.t: list[float] = []
        self.kumo_cpu: list[float] = []
        self.kumo_rss_mib: list[float] = []
        self.services: dict[str, list[float]] = defaultdict(list)
        self.phases: list[tuple[str, float]] = []
        self.pids = service_pids()
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="bench-sampler")

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def phase(self, name: str) -> None:
        self.phases.append((name, time.monotonic() - self._t0))

    def sample(self) -> None:
        pid = self.kumo_pid()
        cpu = rss = 0.0
        if pid:
            try:
                cpu = lab.proc_cpu_seconds(pid)
                rss = lab.proc_status_kib(pid, "VmRSS") / 1024
            except (OSError, IndexError, ValueError):
                pass
        self.t.append(time.monotonic() - self._t0)
        self.kumo_cpu.append(cpu)
        self.kumo_rss_mib.append(rss)
        for service, cpu_s in processes_cpu(self.pids).items():
            self.services[service].append(cpu_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def as_dict(self) -> dict[str, object]:
        return {
            "t": self.t,
            "kumo_cpu_s": self.kumo_cpu,
            "kumo_rss_mib": self.kumo_rss_mib,
            "services_cpu_s": dict(self.services),
            "phases": self.phases,
        }
