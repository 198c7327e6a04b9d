"""Argo CD's health script on Kumo's objects: the gopher-lua evaluator (main.go), the
bodies captured from the lab (bodies/, by capture.py) and the health each must get."""

from __future__ import annotations

from pathlib import Path

BODIES = Path(__file__).resolve().parent / "bodies"
#: A body's state (``<Kind>.<state>.json``) → the health Argo CD must show for it.
STATES = {
    "ready": "Healthy",
    "building": "Progressing",
    "stalled": "Degraded",
    "paused": "Suspended",
    "paused-stalled": "Suspended",
    "deleting": "Progressing",
}
