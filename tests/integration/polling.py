"""The one way integration tests wait: poll a condition until it holds, with a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(
    what: str,
    check: Callable[[], Any],
    timeout: float = 120.0,
    interval: float = 0.5,
    tolerate: tuple[type[BaseException], ...] = (Exception,),
) -> Any:
    """Poll ``check`` until it returns something truthy and return that; fail naming
    ``what`` on timeout. Exceptions in ``tolerate`` count as "not yet" (a read racing a
    deletion); pass ``tolerate=()`` to let them fail the test at once."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except tolerate as error:
            last = error
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
