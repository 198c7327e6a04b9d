"""The gate every condition and event message passes before Kumo writes it.

Status and events are read by anyone who may read the object, and much of what Kumo
reports comes from elsewhere: a cloud's error body, an auth_url a namespace chose, an
exception's text. :func:`public_text` makes such text fit to show: one line, bounded,
URLs without credentials, query or fragment, no HTML, no password or token.

Two places call it, once each: :func:`kumo.engine.conditions.set_condition` (every
condition) and the runtime's event post (every event). It is idempotent, so a status
write of an unchanged message changes nothing. Log lines pass the lighter
:func:`secret_free` (kumo.runtime.logs).
"""

from __future__ import annotations

import re
import urllib.parse

#: Longest condition message (what ``kubectl get`` and dashboards show).
MESSAGE_LIMIT = 300
#: Longest event message (the API server accepts 1 KiB of note).
EVENT_LIMIT = 1024

REDACTED = "[redacted]"
HTML = "[html]"
CUT = "…"

#: The retry hint Kumo's error messages end with (engine.reconciler._report_error):
#: kept whole when a message is cut, since it says what happens next.
_HINT = re.compile(r"\s*\((?:permanent|transient):[^()]*\)$")
_HTML_BLOCK = re.compile(
    r"<(html|head|body|script|style)\b[^>]*>.*?(?:</\1\s*>|$)", re.IGNORECASE | re.DOTALL
)
#: Tags of HTML (error pages), not the ``<name>`` placeholders of Kumo's own messages.
_HTML_TAG = re.compile(
    r"<(?:!doctype|/?(?:a|address|b|body|br|center|div|em|h[1-6]|head|hr|html|i|li|link|"
    r"meta|ol|p|pre|span|strong|table|td|th|title|tr|ul))\b[^<>]*>",
    re.IGNORECASE,
)
_HTML_RUN = re.compile(r"\[html\](?:\s*\[html\])+")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_URL_TRAILER = ".,;:!?)]}"
#: ``scheme://user:password@``: the password (``head`` keeps the rest).
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@\"'<>]*):[^\s/@\"'<>]*@")
_SECRET_KEY = (
    r"(?:[\w-]*[_-])?(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|authorization)"
)
_SECRET_PAIR = re.compile(
    rf"""(?P<key>(?P<q>["']?){_SECRET_KEY}(?P=q))(?P<sep>\s*[:=]\s*)"""
    r"""(?P<value>\[redacted\]|"(?:[^"\\]|\\.)*"|'[^']*'|(?:(?:Bearer|Basic)\s+)?[^\s,;&"'}\]]+)""",
    re.IGNORECASE,
)
#: A word every key of _SECRET_PAIR contains.
_SECRET_HINT = re.compile(r"passw|secret|token|key|authorization", re.IGNORECASE)
#: Keystone's Fernet tokens and JWTs, however short a piece of one is.
_TOKEN = re.compile(r"\bgAAAAA[A-Za-z0-9_=-]+|\beyJ[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_=-]*){1,2}")
_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def public_text(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` folded to one line, stripped of what must not be shown, at most
    ``limit`` characters; a cut keeps the trailing retry hint and drops the middle."""
    text = " ".join(text.split())
    hint = _HINT.search(text)
    if hint is None:
        return _cut(_strip(text), "", limit)
    # Apart, so an unclosed page before it (a body cut short) cannot take it along.
    return _cut(_strip(text[: hint.start()]), _strip(hint.group(0).strip()), limit)


def secret_free(text: str) -> str:
    """``text`` without passwords, tokens or a URL's password, otherwise unchanged:
    what a log line passes (kumo.runtime.logs). IDs, queries and lines are kept, so a
    log still says which resource and which request."""
    # Each pattern only where its cheap hint is (_SECRET_PAIR costs ~100 µs a line).
    if "@" in text and "://" in text:
        text = _URL_PASSWORD.sub(r"\g<head>@", text)
    if _SECRET_HINT.search(text):
        text = _SECRET_PAIR.sub(_blank_value, text)
    if "gAAAAA" in text or "eyJ" in text:
        text = _TOKEN.sub(REDACTED, text)
    return text


def _strip(text: str) -> str:
    text = _HTML_BLOCK.sub(HTML, text)
    text = _HTML_TAG.sub(HTML, text)
    text = _HTML_RUN.sub(HTML, text)
    text = _URL.sub(_bare_url, text)
    text = _SECRET_PAIR.sub(_blank_value, text)
    text = _TOKEN.sub(REDACTED, text)
    return _RUN.sub(_blank_token, text)


def _bare_url(match: re.Match[str]) -> str:
    """A URL without userinfo, query and fragment (a trailing stop stays outside it)."""
    url = match.group(0)
    trailer = ""
    while url and url[-1] in _URL_TRAILER:
        url, trailer = url[:-1], url[-1] + trailer
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}{trailer}"


def _blank_value(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('key')}{match.group('sep')}{quote}{REDACTED}{quote}"


def _blank_token(match: re.Match[str]) -> str:
    """A long run is a token when a piece of it (split where names have separators) is
    32+ hex digits or mixed-case base64 with a digit; UUIDs and long resource names are
    kept."""
    run = match.group(0)
    for piece in re.split(r"[-_]", run):
        if len(piece) < 32:
            continue
        if _HEX.fullmatch(piece) or (
            any(c.isdigit() for c in piece)
            and any(c.isupper() for c in piece)
            and any(c.islower() for c in piece)
        ):
            return REDACTED
    return run


def _cut(body: str, hint: str, limit: int) -> str:
    text = f"{body} {hint}" if body and hint else body or hint
    if len(text) <= limit:
        return text
    if len(hint) + 2 > limit:  # no room for the hint: a plain cut
        return text[: limit - len(CUT)].rstrip() + CUT
    room = limit - len(CUT) - (len(hint) + 1 if hint else 0)
    head = body[:room].rstrip()
    return f"{head}{CUT} {hint}" if hint else f"{head}{CUT}"
