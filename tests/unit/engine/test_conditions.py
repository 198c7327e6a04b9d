"""Conditions: set in place, lastTransitionTime kept while the status holds."""

from __future__ import annotations

from kumo.engine import conditions, text


def test_new_condition_is_appended_with_now() -> None:
    out = conditions.set_condition(
        [], "Ready", True, "Ready", "", generation=1, now="2026-01-01T00:00:00Z"
    )
    assert out == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
    ]


def test_same_status_keeps_transition_time_but_takes_reason_and_message() -> None:
    old = conditions.set_condition(
        [], "Stalled", True, "ImageNotFound", "a", generation=1, now="2026-01-01T00:00:00Z"
    )
    new = conditions.set_condition(
        old, "Stalled", True, "FlavorNotFound", "b", generation=2, now="2026-02-02T00:00:00Z"
    )
    assert new[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert (new[0]["reason"], new[0]["message"], new[0]["observedGeneration"]) == (
        "FlavorNotFound",
        "b",
        2,
    )


def test_status_change_moves_transition_time() -> None:
    old = conditions.set_condition(
        [], "Stalled", False, "Ready", "", generation=1, now="2026-01-01T00:00:00Z"
    )
    new = conditions.set_condition(
        old, "Stalled", True, "InvalidSpec", "x", generation=1, now="2026-02-02T00:00:00Z"
    )
    assert new[0]["lastTransitionTime"] == "2026-02-02T00:00:00Z"
    unknown = conditions.set_condition(new, "Stalled", None, "Unknown", "", generation=1)
    assert unknown[0]["status"] == "Unknown"


def test_condition_keeps_its_place_and_others_are_untouched() -> None:
    other = {"type": "Other", "status": "True", "reason": "Mine", "message": ""}
    start = [
        {"type": "Ready", "status": "False"},
        other,
        {"type": "Stalled", "status": "False"},
        {"type": "Ready", "status": "False"},  # a duplicate someone wrote
    ]
    out = conditions.set_condition(start, "Ready", True, "Ready", "", generation=1)
    assert [c["type"] for c in out] == ["Ready", "Other", "Stalled"]
    assert out[1] is other
    assert conditions.is_true(out)
    assert not conditions.is_true(out, conditions.STALLED)


def test_every_message_passes_the_text_gate() -> None:
    """set_condition is where every condition is written: a message from elsewhere
    (an auth_url with a password, a proxy's page) is one bounded line without them."""
    message = "create: https://u:hunter2@h.example/v3?x=1 <html><body>oops</body></html> " * 20
    out = conditions.set_condition([], "Ready", False, "CloudUnavailable", message, generation=1)
    written = out[0]["message"]
    assert len(written) <= text.MESSAGE_LIMIT
    assert "hunter2" not in written and "<" not in written
    assert written.startswith("create: https://h.example/v3 [html] create:")
