"""The lab kube-apiserver's audit log (dev/kube/up.sh): every write it accepted or
refused (create, update, patch, delete; Metadata level, no bodies), each with the
User-Agent that sent it. Kumo's requests carry their process's Lease identity in it
(``kumo/<version> (<identity>)``, runtime/kube.py), so the log says which of two
operators wrote — what the API server saw, not what the operator counts of itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
AUDIT_DIR = (
    Path(os.environ.get("KUMO_STATE", REPO_ROOT / ".kumo-dev")) / "logs" / "kube-apiserver-audit"
)


@dataclass(frozen=True)
class Write:
    """One audited write request."""

    at: datetime  # when the API server received it (requestReceivedTimestamp)
    verb: str  # create, update, patch, delete, deletecollection
    user_agent: str
    resource: str  # "virtualmachines", "virtualmachines/status", "leases", …
    namespace: str
    name: str
    code: int  # the API server's answer (0: none recorded)

    def by(self, identity: str) -> bool:
        """Whether this was sent by the process whose Lease identity is ``identity``."""
        return f"({identity})" in self.user_agent


def parse(lines: Iterable[str]) -> list[Write]:
    """The writes among audit events (JSON lines); a line cut short while the API server
    writes it, and events of other stages than ResponseComplete, are left out."""
    writes = []
    for line in lines:
        if not line.endswith("\n"):
            continue  # being written
        event = json.loads(line)
        if event.get("stage") != "ResponseComplete":
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "")
        if ref.get("subresource"):
            resource = f"{resource}/{ref['subresource']}"
        writes.append(
            Write(
                at=datetime.fromisoformat(event["requestReceivedTimestamp"]),
                verb=event.get("verb", ""),
                user_agent=event.get("userAgent", ""),
                resource=resource,
                namespace=ref.get("namespace", ""),
                name=ref.get("name", ""),
                code=int((event.get("responseStatus") or {}).get("code") or 0),
            )
        )
    return writes


def writes_since(since: datetime, containing: str = "", directory: Path = AUDIT_DIR) -> list[Write]:
    """Every write the API server received at or after ``since`` (timezone-aware), from
    the audit log and its rotated files, oldest first; with ``containing``, only those
    whose event's line contains it (cheap: the log holds the whole suite's writes)."""
    current = directory / "audit.log"
    if not current.exists():
        raise AssertionError(
            f"no audit log at {current}: the lab's kube-apiserver runs without the audit "
            "flags; dev/kube/up.sh restarts it with them"
        )
    writes: list[Write] = []
    for path in sorted(directory.glob("audit*.log")):  # audit-<time>.log, audit.log
        if path != current and path.stat().st_mtime < since.timestamp():
            continue  # rotated before the window began
        with path.open() as lines:
            chosen = (line for line in lines if containing in line)
            writes += [w for w in parse(chosen) if w.at >= since]
    return sorted(writes, key=lambda w: w.at)
