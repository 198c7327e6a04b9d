"""One global request ID per pass, on the lab (issue 40, item 6): the pass that creates a
VM's server sends ``X-OpenStack-Request-ID: req-<uuid>``; nova-api's log names it
beside its own request ID, ``kumo run --log-format json`` logs that pass's lines with
the object, the pass and Nova's own ID, and the pass's event ends with the same ID.
No credential of the cloud reaches the JSON log."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.integration.helpers import apply, events_of, vm, wait_ready
from tests.integration.kumo_fixtures import STATE, KumoOperator, like, wait_until

NOVA_API_LOG = STATE / "logs" / "nova-api.log"
#: oslo.log's context fields: ``[<global request id> <request id> <user> <project> …]``.
NOVA_CONTEXT = re.compile(r"\[(?P<global>req-[0-9a-f-]{36}|None) (?P<local>req-[0-9a-f-]{36}) ")


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(parsed) == len(lines), [line for line in lines if not line.startswith("{")][:5]
    return parsed


def nova_server_creates(offset: int) -> dict[str, str]:
    """nova-api's ``POST /servers`` since ``offset``: global request ID → Nova's own."""
    with open(NOVA_API_LOG, errors="replace") as log:
        log.seek(offset)
        text = log.read()
    found = {}
    for line in text.splitlines():
        match = NOVA_CONTEXT.search(line)
        if match and '"POST /v2.1/servers HTTP' in line:
            found[match["global"]] = match["local"]
    return found


def demo_password(clouds_yaml: str) -> str:
    clouds = yaml.safe_load(Path(clouds_yaml).read_text())["clouds"]
    return str(clouds["kumo-demo"]["auth"]["password"])


def test_a_vm_pass_is_named_by_one_request_id_in_nova_api_the_json_log_and_its_event(
    namespace: str, kumo_operator: KumoOperator
) -> None:
    kumo_operator.stop()
    operator = like(kumo_operator, "operator-json.log")
    mark = len(operator.log())
    nova_offset = NOVA_API_LOG.stat().st_size
    operator.start("--log-format", "json")
    try:
        operator.wait_role("leader", 90)
        apply(namespace, vm("traced"))
        uid = wait_ready("vm", "traced", namespace)["metadata"]["uid"]

        creates = wait_until(
            "nova-api logged the server's create",
            lambda: nova_server_creates(nova_offset) or None,
            30,
        )
        lines = json_lines(operator.log()[mark:])
        ours = [line for line in lines if (line.get("object") or {}).get("uid") == uid]
        passes = {line["pass"] for line in ours}
        created = [p for p in passes if p in creates]
        assert len(created) == 1, f"nova-api names one of the VM's passes: {creates} {passes}"
        pass_id = created[0]
        assert re.fullmatch(
            r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", pass_id
        )

        of_pass = [line for line in ours if line["pass"] == pass_id]
        assert of_pass[0]["object"] == {
            "kind": "VirtualMachine",
            "namespace": namespace,
            "name": "traced",
            "uid": uid,
        }
        said = {i for line in of_pass for i in line["request_ids"]}
        assert creates[pass_id] in said, "the JSON log names Nova's own ID of the create"
        assert any("cloud request(s)" in line["message"] for line in of_pass)

        wait_until(
            "the pass's event carries its request ID",
            lambda: [
                m for m in events_of(namespace, "traced") if m.endswith(f"(request {pass_id})")
            ],
            30,
        )
        assert demo_password(operator.clouds_yaml) not in operator.log()[mark:]
    finally:
        operator.stop()
        kumo_operator.start()
        kumo_operator.wait_role("leader", 90)
