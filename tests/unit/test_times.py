"""The cloud's timestamps (kumo.ports.times), as Nova, Cinder, Manila and Neutron write
them: with or without ``Z``, microseconds or a zone; no zone means UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kumo.ports.times import parse_updated

NOON = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("stamp", "moment"),
    [
        ("2026-11-28T12:00:00Z", NOON),  # Nova, Neutron
        ("2026-11-28T12:00:00", NOON),  # Cinder's updated_at: no zone, UTC meant
        ("2026-11-28T12:00:00.250000", NOON + timedelta(milliseconds=250)),  # Cinder, Manila
        ("2026-11-28T12:00:00+00:00", NOON),
        ("2026-11-28T21:00:00+09:00", NOON),
    ],
)
def test_a_cloud_timestamp_is_an_aware_utc_moment(stamp: str, moment: datetime) -> None:
    parsed = parse_updated(stamp)
    assert parsed is not None and parsed.tzinfo is not None, "aware: comparable with now(UTC)"
    assert parsed == moment


@pytest.mark.parametrize("stamp", [None, "", "yesterday", "2026-13-01T00:00:00"])
def test_no_timestamp_is_none(stamp: str | None) -> None:
    assert parse_updated(stamp) is None
