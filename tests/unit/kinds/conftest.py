"""Fixtures of the kinds' tests."""

from __future__ import annotations

import pytest

from kumo.kinds import duplicates


@pytest.fixture(autouse=True)
def fresh_memory_of_creates(monkeypatch: pytest.MonkeyPatch) -> duplicates.Creates:
    """Each test starts with no create in doubt (the memory is the process's)."""
    creates = duplicates.Creates()
    monkeypatch.setattr(duplicates, "CREATES", creates)
    return creates
