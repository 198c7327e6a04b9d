"""Where the chaos figures go: stdout, ``.kumo-dev/logs/chaos-summary.log`` and pytest's
terminal summary (``tests/chaos/conftest.py`` prints :data:`SUMMARIES` whether or not
``-s`` was given), so a long ``make chaos`` run leaves its numbers behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev"))
SUMMARY_LOG = STATE / "logs" / "chaos-summary.log"

SUMMARIES: list[str] = []


def record_summary(line: str, log: Path = SUMMARY_LOG) -> None:
    """Report one test's figures everywhere they are looked for."""
    print(line, flush=True)
    SUMMARIES.append(line)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:
        handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
