"""What every service's dry-run half has in common (``kumo.cloud.services.<service>.dryrun``):
the real cloud it reads from, the actions it records, and :func:`passthrough` for its
reads. :class:`kumo.cloud.dryrun.DryRunCloud` composes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from kumo.cloud import model
from kumo.engine.dryrun import Action, Change
from kumo.ports import Cloud, CloudPort

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

NEW_ID = "(new)"


def passthrough(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[DryRunBase, P], R]:
    """A port's read, answered by the real cloud: ``get_server =
    passthrough(ServersPort.get_server)`` — typed as the port declares it, so mypy checks
    the dry cloud against the ports with no ``Any`` (a read left out fails ``make lint``,
    and tests/unit/cloud/test_dryrun.py)."""
    name = method.__name__

    def forward(self: DryRunBase, /, *args: P.args, **kw: P.kwargs) -> R:
        real: Callable[P, R] = getattr(self._inner, name)
        return real(*args, **kw)

    forward.__name__ = name
    return forward


class DryRunBase:
    """The real cloud (``inner``: the adapter, or a unit test's fake) and the writes a
    dry pass would have made."""

    def __init__(self, inner: Cloud) -> None:
        self._inner = inner
        self.region: str | None = inner.region
        self.actions: list[Action] = []

    project_id = passthrough(CloudPort.project_id)

    def _record(
        self, verb: str, noun: str, target: str = "", *changes: Change, note: str = ""
    ) -> None:
        self.actions.append(Action(verb, noun, target, tuple(changes), note))


def passes_through(member: object) -> bool:
    """Is this member of a dry-run half a :func:`passthrough` read?"""
    return getattr(member, "__qualname__", "").startswith("passthrough.")


def port_text(port_id: str | None) -> str:
    """How a floating IP's association reads in a plan and in ``status.drift``."""
    return f"port {port_id}" if port_id else "held (no port)"


def metadata_field(key: str) -> str:
    """Kumo's own keys (``kumo:``) are bookkeeping, the rest the spec's metadata."""
    return f"metadata.{key}" if key.startswith("kumo:") else f"spec.metadata.{key}"


def described(before: str | None, after: str) -> str:
    """The field a description change comes from: ``spec.description`` when the user's
    words differ, else Kumo's bookkeeping (``description``: only its marker word moved, a
    legacy marker re-marked), which is no drift from the spec."""
    if before is None or model.user_text(before) != model.user_text(after):
        return "spec.description"
    return "description"
