"""Mistakes come back as Ready=False with a reason and the field at fault; nothing is
deleted because of bad input."""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import apply, condition, lb_port, members_of, wait_ready, wait_reason
from tests.integration.kumo_fixtures import get_obj, wait_until

TEMPLATE = {"image": "centos79", "flavor": "m1.tiny"}


def vm(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {**TEMPLATE, **spec},
    }


def test_unknown_image_and_flavor(namespace: str, kumo_operator: Any) -> None:
    apply(namespace, vm("bad-image", image="no-such-image"))
    apply(namespace, vm("bad-flavor", flavor="no-such-flavor"))
    image = wait_reason("vm", "bad-image", namespace, "ImageNotFound")
    flavor = wait_reason("vm", "bad-flavor", namespace, "FlavorNotFound")
    assert image["status"] == "False" and image["message"].startswith(
        "spec.image: image 'no-such-image'"
    )
    assert flavor["message"].startswith("spec.flavor: flavor 'no-such-flavor'")
    assert "permanent" in image["message"]


def test_fixing_the_spec_recovers_and_bad_edit_deletes_nothing(
    namespace: str, kumo_operator: Any, demo_conn: Any
) -> None:
    apply(namespace, vm("fixme", image="no-such-image"))
    wait_reason("vm", "fixme", namespace, "ImageNotFound")
    apply(namespace, vm("fixme"))
    running = wait_ready("vm", "fixme", namespace)
    server_id = running["status"]["id"]
    apply(namespace, vm("fixme", image="another-missing-image"))
    wait_reason("vm", "fixme", namespace, "ImageNotFound")
    assert demo_conn.compute.get_server(server_id).status == "ACTIVE", (
        "bad input deleted the server"
    )


def test_dangling_group_reference(namespace: str, kumo_operator: Any) -> None:
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "LoadBalancer",
            "metadata": {"name": "orphan-lb"},
            "spec": {"ports": [lb_port("missing")]},
        },
    )
    cond = wait_reason("lb", "orphan-lb", namespace, "GroupNotFound")
    assert "spec.ports[0].realServers.virtualMachineGroupRef" in cond["message"]


def test_hard_anti_affinity_larger_than_the_hosts(namespace: str, kumo_operator: Any) -> None:
    apply(
        namespace,
        {
            "apiVersion": "kumo.dev/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "too-hard"},
            "spec": {"replicas": 4, "haPolicy": "hard", "template": TEMPLATE},
        },
    )

    def placement() -> tuple[int, list[dict[str, Any]]] | None:
        members = members_of(namespace, "too-hard")
        ready = sum(condition(m).get("status") == "True" for m in members)
        failed = [condition(m) for m in members if condition(m).get("reason") == "NoValidHost"]
        return (ready, failed) if len(members) == 4 and ready == 3 and failed else None

    # Four boots at once on three hosts race in Nova: its late anti-affinity check can
    # fail two of them (rescheduled until ERROR), and then 3/4 needs Kumo's replacement
    # of a server in ERROR (after 1 min, then 2 min): allow for two such rounds.
    _, failed = wait_until("3 placed, 1 NoValidHost", placement, 420)
    assert failed[0]["message"].startswith("spec.serverGroup: Nova put the server in ERROR")
    # The group may first say so while its third member is still booting: wait for the
    # count to catch up too.
    group = wait_until(
        "the group says why, with 3 ready",
        lambda: (
            (g := get_obj("vmg", "too-hard", namespace))
            and condition(g).get("reason") == "MemberFailed"
            and g["status"].get("readyReplicas") == 3
            and g
        ),
        120,
    )
    assert condition(group)["status"] == "False"
    assert condition(group)["message"].startswith("spec.haPolicy: 3/4 members ready")
