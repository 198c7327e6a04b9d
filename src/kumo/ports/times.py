"""The cloud's timestamps, read the same way by the adapter and the kinds.

OpenStack services stamp resources in ISO 8601, with or without a ``Z``, with or
without microseconds, and Nova and Cinder often with no zone at all (UTC is meant).
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_updated(value: str | None) -> datetime | None:
    """A resource's ``created_at``/``updated_at`` as an aware UTC datetime (a stamp with
    no zone is UTC); None when absent or not a timestamp."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
