"""Build the Go test programs of tests/ (tests/kstatus, tests/argocd): once per machine,
cached under ~/.cache/kumo by a hash of their sources (tests/gobuild.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def build(program: str) -> str:
    """The path of ``tests/<program>``'s binary, built first if its sources changed."""
    built = subprocess.run(
        ["bash", str(TESTS / "gobuild.sh"), str(TESTS / program)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, f"tests/gobuild.sh {program}: {built.stderr[-3000:]}"
    return built.stdout.strip()
