"""Issue 38, finding 6: the orphan sweep never deletes data unless told to.

A Volume whose finalizer is removed by hand and which is then deleted leaves its volume
in Cinder, still carrying the marker of an object that no longer exists. With the
operator in ``--orphan-sweep delete`` and a short grace, the volume is reported
(``OrphanFound``, with how to import or delete it; ``kumo_orphaned_resources`` with
``kept="true"``; ``kumo orphans``) and still exists sweeps after a security group
leaked the same way — which proves the sweep runs and deletes at this grace — is gone.
Four security groups of live objects keep the two leaks under the breaker's 50 %, so
the volume is kept because it holds data, not because the sweep is suspended.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from typing import Any

from tests.integration.helpers import apply, namespace_events, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import REPO_ROOT, KumoOperator, like, wait_until
from tests.integration.test_security_groups import group_of, sg_manifest
from tests.integration.test_volumes import cinder, volume_manifest, volume_of

ANCHORS = ("anchor-a", "anchor-b", "anchor-c", "anchor-d")


def _leak(kind: str, name: str, namespace: str) -> None:
    """What a user does to an object stuck in deletion: the finalizer goes by hand,
    and the object with it (the operator is stopped: nothing puts it back)."""
    kubectl(
        "patch", kind, name, "-n", namespace, "--type=merge",
        "-p", '{"metadata":{"finalizers":null}}',
    )  # fmt: skip
    kubectl("delete", kind, name, "-n", namespace, "--wait=true")


def _orphans(operator: KumoOperator) -> list[dict[str, Any]]:
    """`kumo orphans -o json` for the operator's cloud, against the lab's API server."""
    done = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "kumo"),
            "orphans",
            "--clouds-yaml",
            operator.clouds_yaml,
            "--cloud",
            operator.cloud,
            "-o",
            "json",
        ],
        env=operator.kube.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(done.stdout))


def test_an_orphaned_volume_is_reported_and_never_swept(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    ns = namespace
    for anchor in ANCHORS:
        apply(ns, sg_manifest(anchor, []))
    apply(ns, sg_manifest("leaked-sg", []))
    apply(ns, volume_manifest("pgdata", 1))
    volume = wait_ready("vol", "pgdata", ns, timeout=120)
    volume_id, volume_uid = volume["status"]["id"], volume["metadata"]["uid"]
    group_id = wait_ready("sg", "leaked-sg", ns, timeout=60)["status"]["id"]
    for anchor in ANCHORS:
        wait_ready("sg", anchor, ns, timeout=60)
    kumo_operator.stop()
    sweeping = like(kumo_operator, "operator-sweep-data.log")
    try:
        _leak("vol", "pgdata", ns)
        _leak("sg", "leaked-sg", ns)
        sweeping.start("--orphan-sweep", "delete", "--orphan-grace", "5", "--sweep-seconds", "1")
        sweeping.wait_role("leader", 90)
        found = wait_until(
            "the orphaned volume reported",
            lambda: [m for m in namespace_events(ns, "OrphanFound") if volume_id in m],
            120,
        )
        assert volume_uid in found[0] and "never deleted by the sweep" in found[0]
        unset = f"volume unset --property kumo-owner --property kumo-cluster {volume_id}"
        assert unset in found[0]
        assert f"import: id: {volume_id}" in found[0]  # events are folded to one line
        assert f"openstack volume delete {volume_id}" in found[0]
        wait_until("the leaked security group swept", lambda: group_of(demo_conn, group_id) is None)
        assert [m for m in namespace_events(ns, "OrphanDeleted") if group_id in m]
        sweeps = sweeping.metric("kumo_orphan_sweeps_total")
        wait_until(
            "two more sweeps",
            lambda: sweeping.metric("kumo_orphan_sweeps_total") >= sweeps + 2,
            60,
            interval=0.5,
        )
        kept = volume_of(demo_conn, volume_id)
        assert kept is not None and kept["status"] == "available", "the data is still there"
        assert not [m for m in namespace_events(ns, "OrphanDeleted") if volume_id in m]
        assert sweeping.metric("kumo_orphaned_resources", kind="volume", kept="true") >= 1
        assert sweeping.metric("kumo_orphan_sweep_suspended") == 0
        (row,) = [r for r in _orphans(sweeping) if r["id"] == volume_id]
        assert (row["kind"], row["owner"], row["sweep"]) == ("volume", volume_uid, "keep")
    finally:
        sweeping.kill()
        kumo_operator.start()
        with contextlib.suppress(Exception):
            cinder(demo_conn, "delete", f"/volumes/{volume_id}")
    wait_until("the volume cleaned up", lambda: volume_of(demo_conn, volume_id) is None, 60)
