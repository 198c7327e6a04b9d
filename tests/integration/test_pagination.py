"""More Volumes and Shares than one page of the lab's Cinder and Manila (issue 38, item 9).

The lab's Cinder and Manila answer at most ``KUMO_LAB_PAGE_SIZE`` (5) items per listing
page (docs/lab.md). Seven Volumes and seven Shares become Ready; then two of the watch's
complete listings go by, read from cinder-api's and manila-api's own request logs (each
of Cinder's crossing a page: a request with a ``marker``), and every object is still
Ready on the resource it was made with, one per object. Then each object's ``status.id``
is cleared, as a crash between a create and its status write leaves it: Kumo must adopt
the resource it already made, found by its marker in the watch's cache — which holds the
volumes past the first page only because the watch reads every page. Before
cloud/pages.py those volumes looked gone, and each object whose volume lay past the
first page got a second one.

Zed's Manila does not cut its share listing at the page size (it answers every share;
older releases did cut it, see cloud/pages.py): the Share half checks that Kumo works
with a Manila run at 5 per page, and pays one call per listing for its shares.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.lab import LOGS
from bench.reqlog import SERVICES, LogWindow, Service, parse_line
from tests.integration.helpers import apply, cinder_pages, wait_ready
from tests.integration.kube_fixtures import kubectl
from tests.integration.kumo_fixtures import KumoOperator, get_obj, wait_until

COUNT = 7  # more than the lab's page
MANAGED = {"kumo": "managed"}
LOGGED = (*(s for s in SERVICES if s.name == "cinder"), Service("manila", "manila-api.log", True))


def volume(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "Volume",
        "metadata": {"name": name},
        "spec": {"size": 1, "description": "pages"},
    }


def share(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kumo.dev/v1alpha1",
        "kind": "Share",
        "metadata": {"name": name},
        "spec": {"protocol": "NFS", "size": 1, "shareType": "default"},
    }


def listings(window: LogWindow, project: str, service: str, path: str) -> list[dict[str, Any]]:
    """The query of every request of the watch's listing of Kumo's resources (``path``,
    filtered by ``kumo: managed``) that ``service`` logged since ``window``, in order."""
    found = []
    for logged, line in window.lines():
        req = parse_line(line)
        if logged.name != service or req is None or req.project != project:
            continue
        url = urlsplit(req.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path.endswith(path) and json.loads(query.get("metadata", "{}")) == MANAGED:
            found.append(query)
    return found


def two_listings_by(window: LogWindow, project: str) -> bool:
    """Two complete listings of each service since ``window``: a third has begun. The
    watch lists a service one listing at a time, a first page then its marker pages."""
    cinder = listings(window, project, "cinder", "/volumes/detail")
    first = [q for q in cinder if "marker" not in q]
    shares = listings(window, project, "manila", "/shares/detail")
    return len(first) >= 3 and len(cinder) - len(first) >= 2 and len(shares) >= 3


def one_each(found: list[dict[str, Any]], uids: dict[str, str]) -> dict[str, list[str]]:
    """Resource IDs per object name, by the owner marker in their metadata."""
    by_uid = {uid: name for name, uid in uids.items()}
    out: dict[str, list[str]] = {name: [] for name in uids}
    for x in found:
        owner = (x.get("metadata") or {}).get("kumo-owner")
        if owner in by_uid and x.get("status") != "deleting":
            out[by_uid[owner]].append(x["id"])
    return out


def manila_shares(conn: Any) -> list[dict[str, Any]]:
    response = conn.shared_file_system.get(
        "/shares/detail", params={"metadata": json.dumps(MANAGED)}, microversion="2.45"
    )
    assert response.status_code == 200, response.text
    return list(response.json()["shares"])


def adopted(namespace: str, name: str) -> list[str]:
    out = kubectl(
        "get", "events", "-n", namespace, "-o", "json",
        "--field-selector", f"involvedObject.name={name},reason=Adopted",
    ).stdout  # fmt: skip
    return [e.get("message", "") for e in json.loads(out)["items"]]


def test_volumes_and_shares_past_a_page_stay_seen_and_are_adopted_not_made_twice(
    namespace: str, kumo_operator: KumoOperator, demo_conn: Any
) -> None:
    ns = namespace
    project = demo_conn.current_project_id
    kinds = {"vol": [f"v{i}" for i in range(COUNT)], "share": [f"s{i}" for i in range(COUNT)]}
    for name in kinds["vol"]:
        apply(ns, volume(name))
    for name in kinds["share"]:
        apply(ns, share(name))
    made = {
        (kind, name): wait_ready(kind, name, ns, timeout=240)
        for kind, names in kinds.items()
        for name in names
    }
    ids = {key: obj["status"]["id"] for key, obj in made.items()}
    uids = {
        kind: {n: made[kind, n]["metadata"]["uid"] for n in names} for kind, names in kinds.items()
    }

    # The lab pages: one request lists fewer of Kumo's volumes than these seven.
    raw = demo_conn.block_storage.get(
        "/volumes/detail", params={"metadata": json.dumps(MANAGED)}, microversion="3.0"
    ).json()
    assert len(raw["volumes"]) < COUNT and raw.get("volumes_links"), (
        "the lab's Cinder answers a page of 7 or more: run `lab.sh reconfigure cinder`"
    )

    def volumes_now() -> dict[str, list[str]]:
        params = {"metadata": json.dumps(MANAGED)}
        found = cinder_pages(demo_conn, "/volumes/detail", "volumes", "3.0", params)
        return one_each(found, uids["vol"])

    def shares_now() -> dict[str, list[str]]:
        return one_each(manila_shares(demo_conn), uids["share"])

    def unchanged() -> None:
        for (kind, name), rid in ids.items():
            obj = wait_ready(kind, name, ns, timeout=60)
            assert obj["status"]["id"] == rid, f"{kind}/{name} moved to another resource"
        assert volumes_now() == {n: [ids["vol", n]] for n in kinds["vol"]}
        assert shares_now() == {n: [ids["share", n]] for n in kinds["share"]}

    window = LogWindow(LOGS, LOGGED)
    wait_until("two listings of Cinder and Manila", lambda: two_listings_by(window, project), 60)
    unchanged()

    # A create whose status write was lost: each object must find what it made.
    for kind, name in ids:
        kubectl(
            "patch", kind, name, "-n", ns, "--subresource=status", "--type=merge",
            "-p", '{"status":{"id":null}}',
        )  # fmt: skip
        kubectl("annotate", kind, name, "-n", ns, "--overwrite", "kumo-test/status-lost=1")

    def recorded(kind: str, name: str) -> str | None:
        return ((get_obj(kind, name, ns) or {}).get("status") or {}).get("id")

    for (kind, name), rid in ids.items():
        found = wait_until(
            f"{kind}/{name} records a resource", functools.partial(recorded, kind, name), 120
        )
        assert found == rid, f"{kind}/{name} made {found} instead of adopting {rid}"
    for (kind, name), rid in ids.items():
        assert any(rid in m for m in adopted(ns, name)), f"{kind}/{name} adopted {rid}"
    unchanged()
