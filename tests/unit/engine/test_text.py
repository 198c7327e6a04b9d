"""The gate of condition and event messages: one line, bounded, no credentials, no
foreign page, and the retry hint kept when a message is cut."""

from __future__ import annotations

import pytest

from kumo.engine.text import EVENT_LIMIT, MESSAGE_LIMIT, REDACTED, public_text

HINT = "(permanent: fix the spec or the cloud; retrying every 60s)"
FERNET = "gAAAAABnQ2x5b3VkLXRva2VuLWZvci10ZXN0aW5nLW9ubHktbm90LXJlYWw_Zm9vYmFy-LWJheg=="


def test_folded_to_one_line() -> None:
    assert public_text("create server:\n  HTTP 400:\tbad\r\n request") == (
        "create server: HTTP 400: bad request"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://admin:s3cret@keystone.example.com:5000/v3?token=abc#frag",
            "https://keystone.example.com:5000/v3",
        ),
        ("rabbit://kumo:pw@10.0.0.5:5672/", "rabbit://10.0.0.5:5672/"),
        (
            "http://nova.example.com/v2.1/servers/detail",
            "http://nova.example.com/v2.1/servers/detail",
        ),
    ],
)
def test_urls_lose_userinfo_query_and_fragment(url: str, shown: str) -> None:
    assert public_text(f"cannot reach {url}.") == f"cannot reach {shown}."


def test_html_is_blanked() -> None:
    page = (
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>"
        "<h1>Bad Gateway</h1><p>upstream 10.0.0.7:8774 password=x</p></body></html>"
    )
    out = public_text(f"list servers: HTTP 502: {page} (transient: retrying)")
    assert out == "list servers: HTTP 502: [html] (transient: retrying)"


def test_placeholders_in_kumo_messages_are_not_html() -> None:
    message = "expected an OpenSSH public key, '<type> <base64 key> [comment]'"
    assert public_text(message) == message


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ('{"password": "hunter2", "user": "demo"}', '{"password": "[redacted]", "user": "demo"}'),
        ("password=hunter2&user=demo", "password=[redacted]&user=demo"),
        ("{'admin_password': 'hunter2'}", "{'admin_password': '[redacted]'}"),
        ("X-Auth-Token: abc123", "X-Auth-Token: [redacted]"),
        ("Authorization: Bearer abc123", "Authorization: [redacted]"),
        ("secret_key = s3", "secret_key = [redacted]"),
    ],
)
def test_secret_pairs_are_blanked(text: str, shown: str) -> None:
    assert public_text(text) == shown


@pytest.mark.parametrize(
    "token",
    [
        FERNET,
        "gAAAAABshort_one",  # a piece of a Fernet token
        "0123456789abcdef0123456789abcdef",  # a Keystone UUID token
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",  # a JWT
        "QmFzZTY0RW5jb2RlZFNlY3JldDEyMzQ1Njc4OTA+/x",  # mixed-case base64 with digits
    ],
)
def test_token_like_strings_are_blanked(token: str) -> None:
    assert public_text(f"rejected {token} here") == f"rejected {REDACTED} here"


@pytest.mark.parametrize(
    "kept",
    [
        "8a3c1f2e-4b5d-4e6f-8a9b-0c1d2e3f4a5b",  # a resource's UUID
        "kumo-team-a-frontend-group-member-0001",  # a long resource name
        "kumo.dev/v1alpha1/namespaces/default/virtualmachines",
        "kumo-owner=3f1e2d4c-5b6a-4789-90ab-cdef01234567",
    ],
)
def test_ids_names_and_paths_are_kept(kept: str) -> None:
    assert public_text(f"server {kept} is gone") == f"server {kept} is gone"


def test_a_cut_keeps_the_retry_hint_and_drops_the_middle() -> None:
    message = "create server: " + "detail " * 100 + "the end " + HINT
    out = public_text(message, MESSAGE_LIMIT)
    assert len(out) <= MESSAGE_LIMIT
    assert out.startswith("create server: detail")
    assert out.endswith(f"… {HINT}")
    assert "the end" not in out


def test_a_cut_without_a_hint_ends_with_an_ellipsis() -> None:
    out = public_text("x" * 5000, EVENT_LIMIT)
    assert len(out) == EVENT_LIMIT and out.endswith("…")


def test_short_text_is_unchanged() -> None:
    message = f"spec.image: image 'centos79' not found {HINT}"
    assert public_text(message) == message


@pytest.mark.parametrize(
    "text",
    [
        "password=hunter2 at https://u:p@h/x?q=1 " + "word " * 200 + HINT,
        '<html><body>oops</body></html> "token": "abc" ' + FERNET,
        "y" * 400,
    ],
)
def test_the_gate_is_idempotent(text: str) -> None:
    """A status written again with the same message must not change (no write churn)."""
    once = public_text(text)
    assert public_text(once) == once


def test_a_page_cut_short_before_the_hint_does_not_take_the_hint_along() -> None:
    out = public_text(
        "create: HTTP 502: <html><body><h1>Bad Gateway</h1> upstream (transient: retrying)"
    )
    assert out == "create: HTTP 502: [html] (transient: retrying)"
