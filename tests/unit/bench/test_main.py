"""`python -m bench` can be stopped with SIGTERM, or with SIGINT when started in the
background, and then cleans up as after Ctrl-C."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from bench.__main__ import stoppable


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGTERM, saved[1])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_interrupts_the_run_even_if_sigint_was_ignored(
    handlers: None, signum: int
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job of `bash -c` has it
    stoppable()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signum)  # Python runs the handler as the call returns
