"""How a port is declared: every method ``@read`` or ``@write``, and what every port has (:class:`CloudPort`).

See :mod:`kumo.ports` for the ports themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
MARK = "__kumo_port__"


def read(fn: F) -> F:
    """Declares a port method a read: the dry pass passes it through to the real cloud."""
    setattr(fn, MARK, "read")
    return fn


def write(fn: F) -> F:
    """Declares a port method a write: the dry pass records it and never makes it."""
    setattr(fn, MARK, "write")
    return fn


class CloudPort(Protocol):
    """What every cloud port has: the region and project it acts in."""

    region: str | None

    @read
    async def project_id(self) -> str | None: ...
