"""``kumo run --log-format``: the JSON formatter's fields (runtime/logs.py), the pass's ID
at the end of its events (EventRecorder), and no credential in any log line."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import pytest

from kumo.api.kinds import VIRTUAL_MACHINE
from kumo.cli import build_parser
from kumo.engine import trace
from kumo.engine.objects import Obj
from kumo.runtime import logs
from kumo.runtime.controller import EventRecorder
from tests.unit.fakes import make_body

PASSWORD = "s3cr3t-Pa55word"
TOKEN = "gAAAAABnZ0x-fernet-token-piece_0123456789"


def record(message: str, *args: Any, level: int = logging.INFO, **extra: Any) -> logging.LogRecord:
    made = logging.LogRecord("kumo.engine", level, __file__, 1, message, args, None)
    for key, value in extra.items():
        setattr(made, key, value)
    return made


def as_json(line: logging.LogRecord) -> dict[str, Any]:
    text = logs.formatter("json").format(line)
    assert "\n" not in text, "one line per record"
    return json.loads(text)  # type: ignore[no-any-return]


def test_a_line_outside_a_pass_has_time_level_logger_and_message_first() -> None:
    data = as_json(record("cloud watch of %s synced", "compute"))
    assert list(data)[:4] == ["time", "level", "logger", "message"]
    assert data["level"] == "INFO"
    assert data["logger"] == "kumo.engine"
    assert data["message"] == "cloud watch of compute synced"
    assert data["time"].endswith("+00:00")
    assert "object" not in data and "pass" not in data


def test_a_line_inside_a_pass_names_the_object_the_pass_and_its_request_ids() -> None:
    with trace.running("VirtualMachine", "team-a", "web-0", "uid-1") as opened:
        opened.saw("req-11111111-2222-3333-4444-555555555555")
        data = as_json(record("VirtualMachine/team-a/web-0: server created"))
    assert data["object"] == {
        "kind": "VirtualMachine",
        "namespace": "team-a",
        "name": "web-0",
        "uid": "uid-1",
    }
    assert data["pass"] == opened.request_id
    assert data["request_ids"] == ["req-11111111-2222-3333-4444-555555555555"]
    assert data["logger"] == "kumo.engine", "the object's name does not replace the logger's"


def test_kopfs_lines_about_an_object_name_it_too() -> None:
    ref = {"apiVersion": "kumo.dev/v1alpha1", "kind": "VirtualMachine", "name": "vm",
           "uid": "u", "namespace": "ns"}  # fmt: skip
    data = as_json(record("Handler succeeded", k8s_ref=ref, k8s_skip=False, settings=object()))
    assert data["object"] == {"kind": "VirtualMachine", "namespace": "ns", "name": "vm", "uid": "u"}
    assert "k8s_ref" not in data and "settings" not in data


def test_a_failure_keeps_its_traceback() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = record("pass failed", level=logging.ERROR)
        failed.exc_info = sys.exc_info()
    data = as_json(failed)
    assert data["level"] == "ERROR"
    assert "RuntimeError: boom" in data["exc_info"]


LEAKS = [
    ("connecting with %s", ({"auth": {"username": "kumo", "password": PASSWORD}},)),
    ("auth failed: password=%s", (PASSWORD,)),
    ("GET http://k/v3 headers X-Auth-Token: %s", (TOKEN,)),
    ("listening on amqp://kumo:%s@127.0.0.1:5672/", (PASSWORD,)),
    ("%s", ('{"auth": {"passwordCredentials": {"password": "' + PASSWORD + '"}}}',)),
    ("token %s", (TOKEN,)),
    ("env OS_PASSWORD=%s", (PASSWORD,)),
    ("kube request Authorization: Bearer %s", (PASSWORD,)),
    ("secret data {'api_key': '%s'}", (PASSWORD,)),
]


@pytest.mark.parametrize("log_format", logs.FORMATS)
@pytest.mark.parametrize(("message", "args"), LEAKS)
def test_no_credential_reaches_a_log_line(log_format: str, message: str, args: tuple[Any]) -> None:
    line = record(message, *args)
    text = logs.formatter(log_format).format(line)
    assert PASSWORD not in text and TOKEN not in text and "fernet-token" not in text, text


@pytest.mark.parametrize("log_format", logs.FORMATS)
def test_no_credential_reaches_a_log_line_through_an_exception(log_format: str) -> None:
    try:
        raise ValueError(f"clouds.yaml: password: {PASSWORD}")
    except ValueError:
        failed = record("could not connect", level=logging.ERROR)
        failed.exc_info = sys.exc_info()
    text = logs.formatter(log_format).format(failed)
    assert PASSWORD not in text
    assert "ValueError" in text


def test_ids_and_names_stay_readable() -> None:
    """The redaction is for secrets only: IDs, URLs and queries a reader needs stay."""
    message = (
        "GET http://127.0.0.1:8774/v2.1/servers/detail?changes-since=x project "
        "75b07065846645ac943348187d08a36e server 8f1c2f3e-0000-4000-8000-000000000001"
    )
    assert as_json(record(message))["message"] == message


def test_kumo_run_takes_the_log_format_and_defaults_to_text() -> None:
    parser = build_parser()
    assert parser.parse_args(["run"]).log_format == "text"
    assert parser.parse_args(["run", "--log-format", "json"]).log_format == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--log-format", "xml"])


def test_configure_puts_one_handler_with_the_format_on_the_root() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        logs.configure("json")
        assert len(root.handlers) == 1
        assert isinstance(root.handlers[0].formatter, logs.KumoJsonFormatter)
        assert logging.getLogger("keystoneauth").level == logging.WARNING
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


class PostedEvents:
    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str]] = []

    async def post_event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.posted.append((type_, reason, message))


def test_an_event_of_a_pass_ends_with_its_request_id_and_repeats_are_still_dropped() -> None:
    kube = PostedEvents()
    obj = Obj(VIRTUAL_MACHINE, make_body(VIRTUAL_MACHINE, "vm", {}))

    async def two_passes() -> list[str]:
        recorder = EventRecorder(kube)
        ids = []
        for _ in range(2):
            with trace.running("VirtualMachine", "default", "vm", obj.uid) as opened:
                recorder.emit(obj, "Normal", "Ready", "server ACTIVE")
                ids.append(opened.request_id)
        recorder.emit(obj, "Normal", "Deleted", "outside a pass")
        await asyncio.sleep(0.01)
        return ids

    ids = asyncio.run(two_passes())
    assert kube.posted == [
        ("Normal", "Ready", f"server ACTIVE (request {ids[0]})"),
        ("Normal", "Deleted", "outside a pass"),
    ], "the second pass's same event is a repeat: dropped"


def test_a_long_event_keeps_its_request_id() -> None:
    kube = PostedEvents()
    obj = Obj(VIRTUAL_MACHINE, make_body(VIRTUAL_MACHINE, "vm", {}))

    async def one() -> str:
        recorder = EventRecorder(kube)
        with trace.running("VirtualMachine", "default", "vm", obj.uid) as opened:
            recorder.emit(obj, "Warning", "CloudError", "x" * 5000 + " (transient: retrying)")
        await asyncio.sleep(0.01)
        return opened.request_id

    request_id = asyncio.run(one())
    message = kube.posted[0][2]
    assert len(message) <= 1024
    assert message.endswith(f"(transient: retrying) (request {request_id})")
