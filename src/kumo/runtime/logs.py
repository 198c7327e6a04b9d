"""How ``kumo run`` logs: ``--log-format text`` (the default) or ``json``.

``json`` writes one object per line with python-json-logger (the formatter kopf itself
uses): ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, ``exc_info`` after
a failure, and, for every line logged during a reconcile (:mod:`kumo.engine.trace`):

* ``object``: ``kind``, ``namespace``, ``name``, ``uid``;
* ``pass``: the pass's global request ID (``req-<uuid>``), sent as
  ``X-OpenStack-Request-ID`` on each of its cloud calls: the services' API logs
  name it, and so do the pass's events;
* ``request_ids``: the services' own request IDs of the calls the pass has made so far
  (the latest 32).

kopf's own lines about an object carry it as ``object`` too. Both formats pass every
line through :func:`kumo.engine.text.secret_free`: no password, token or URL password
reaches the log, whatever an exception or a library put in its text.

Called once, by :func:`kumo.runtime.operator.run_operator`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from kumo.engine import trace
from kumo.engine.text import secret_free

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
#: Loggers that say every request they make (keystoneauth, urllib3) or load: kept to
#: warnings; Kumo logs what it does itself.
NOISY = ("openstack", "keystoneauth", "urllib3", "stevedore")
#: Attributes kopf's object loggers add to a record, not for the line.
_KOPF_EXTRAS = {"k8s_skip", "k8s_ref", "settings"}
_FIRST = ("time", "level", "logger", "message")
#: Fields Kumo fills from its own values (names, UIDs, request IDs): not filtered.
_OWN = frozenset({"time", "level", "logger", "object", "pass", "request_ids"})


class TextFormatter(logging.Formatter):
    """The plain format, secrets taken out."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        return secret_free(super().format(record))


class KumoJsonFormatter(JsonFormatter):
    """One JSON object per line, with the current pass (see the module's docstring)."""

    def __init__(self) -> None:
        from pythonjsonlogger.core import RESERVED_ATTRS

        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            reserved_attrs=[*RESERVED_ATTRS, *_KOPF_EXTRAS],
            timestamp="time",
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        opened = trace.current()
        if opened is not None:
            log_data.update(opened.fields())
        else:
            ref = getattr(record, "k8s_ref", None)  # kopf's line about an object
            if isinstance(ref, dict):
                log_data["object"] = {
                    k: ref[k] for k in ("kind", "namespace", "name", "uid") if k in ref
                }

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        ordered = {k: log_data[k] for k in _FIRST if k in log_data}
        ordered.update(log_data)
        return {k: v if k in _OWN else _clean(v) for k, v in ordered.items()}


def _clean(value: Any) -> Any:
    """``value`` with no secret in any string of it."""
    if isinstance(value, str):
        return secret_free(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def formatter(log_format: str) -> logging.Formatter:
    if log_format == "json":
        return KumoJsonFormatter()
    if log_format == "text":
        return TextFormatter()
    raise ValueError(f"unknown log format {log_format!r} (one of {', '.join(FORMATS)})")


def configure(log_format: str = "text", verbose: bool = False) -> None:
    """Send every logger's lines to stderr in ``log_format``; quiet the noisy ones."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not verbose:  # "Handler 'watch-…' succeeded" for every watch event: at 1,000 VMs
        # two thirds of the log. Kumo logs what it does itself (kumo.controller).
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
