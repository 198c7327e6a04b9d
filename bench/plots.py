"""PNG plots of a benchmark run (matplotlib, the `bench` extra), small (dpi 80):

* ``ready``: VMs Ready (Kumo) / ACTIVE with an address (direct) over time, per contender;
* ``requests``: requests per service per contender (converge + delete), grouped bars;
* ``cpu``: the fleet's Kumo CPU (cores) and RSS over time, against the lab's services.

Each function writes one file and returns its path; nothing here touches the lab.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.report import SHOWN, Row
from bench.sampler import rates

DPI = 80
SIZE = (8, 4.5)


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")  # no display; also safe in a thread-less CLI
    import matplotlib.pyplot as plt

    return plt


def ready_over_time(
    rows: Sequence[Row], path: Path, ylabel: str = "VMs Ready (Kumo) / ACTIVE (direct)"
) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=SIZE)
    seen: dict[tuple[str, int], int] = {}
    repeated = len({(r.contender, r.n) for r in rows}) < len(rows)
    for row in rows:
        k = seen[(row.contender, row.n)] = seen.get((row.contender, row.n), 0) + 1
        if not row.ready_timeline:
            continue
        t, n = zip(*row.ready_timeline, strict=True)
        label = f"{row.contender} N={row.n}" + (f" run {k}" if repeated else "")
        ax.step(t, n, where="post", label=label)
    ax.set_xlabel("seconds since the objects / creates were submitted")
    ax.set_ylabel(ylabel)
    ax.set_title("VMs ready over time")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def requests_per_service(rows: Sequence[Row], path: Path, shown: Sequence[str] = SHOWN) -> Path:
    plt = _pyplot()
    done = [r for r in rows if r.requests and not r.error]
    services = [s for s in shown if any(r.requests.get(s) for r in done)]
    services.append("other")
    fig, ax = plt.subplots(figsize=SIZE)
    width = 0.8 / max(1, len(done))
    for i, row in enumerate(done):
        other = row.total_requests - sum(row.requests.get(s, 0) for s in shown)
        values = [row.requests.get(s, 0) for s in services[:-1]] + [other]
        xs = [x + i * width for x in range(len(services))]
        ax.bar(xs, values, width, label=f"{row.contender} N={row.n}")
    ax.set_xticks([x + width * (len(done) - 1) / 2 for x in range(len(services))], services)
    ax.set_ylabel("requests (converge + delete)")
    ax.set_title("Requests per service")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def cpu_over_time(samples: Mapping[str, object], path: Path, top: int = 6) -> Path:
    """Kumo's cores and RSS over time, and the ``top`` busiest lab services' cores."""
    plt = _pyplot()
    t = list(samples["t"])  # type: ignore[call-overload]
    kumo = rates(t, samples["kumo_cpu_s"])  # type: ignore[arg-type]
    services: dict[str, list[float]] = {
        s: rates(t, v)
        for s, v in samples["services_cpu_s"].items()  # type: ignore[attr-defined]
    }
    busiest = sorted(services, key=lambda s: -sum(services[s]))[:top]
    fig, (ax, ax_rss) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, height_ratios=[3, 1])
    mid = t[1:]
    ax.plot(mid, kumo, label="kumo", color="black", linewidth=1.5)
    for s in busiest:
        ax.plot(mid, services[s], label=s, linewidth=0.8)
    for name, at in samples.get("phases") or []:  # type: ignore[attr-defined]
        ax.axvline(at, color="grey", linestyle=":")
        ax.text(at, ax.get_ylim()[1] * 0.95, f" {name}", fontsize="x-small", va="top")
    ax.set_ylabel("CPU (cores)")
    ax.set_title("Kumo's CPU against the lab's services")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the plot
    ax_rss.plot(t, samples["kumo_rss_mib"], color="black")  # type: ignore[arg-type]
    ax_rss.set_ylabel("Kumo RSS MiB")
    ax_rss.set_xlabel("seconds since the run started")
    ax_rss.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
