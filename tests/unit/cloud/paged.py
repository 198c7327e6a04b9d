"""Fake listings that page the way the services do, for cloud/pages.py's tests.

:class:`LinkedListing` answers like Cinder (``osapi_max_limit``) and Neutron
(``pagination_max_limit``): at most ``page`` items per answer (fewer when the request's
``limit`` asks), after the ``marker``'s item (404 when that item is gone), with a ``next``
link on a full page whose host is the service's own idea of its name, and Cinder's
``count`` when asked ``with_count``. :class:`CountedListing`
answers like Manila's share listing: ``with_count``, ``limit`` and ``offset`` (Zed applies
an offset only with a limit), a link only when the request named a limit, and a marker it
ignores; ``cap`` cuts an answer silently as Manila releases before Zed did.

Both keep every query they were asked (``asked``), so a test counts the calls a listing
cost, and answer a plain dict query (``{"limit": "5"}``) or requests-mock's requests
(:meth:`callback`).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import requests_mock as rm

Query = dict[str, Any]

#: Where the services' links point: not where the client reaches them (a proxy, an
#: internal name), so a client that followed the href itself would fail.
LINK_HOST = "http://service.internal:1234"


class NotFound(Exception):
    """The fake's 404 (a marker whose item is gone), with the SDK errors' ``status_code``."""

    status_code = 404


def volume(n: int, owner: str = "uid-a") -> dict[str, Any]:
    return {
        "id": f"vol-{n:04d}",
        "name": f"v{n}",
        "status": "available",
        "size": 1,
        "metadata": {"kumo": "managed", "kumo-owner": owner},
    }


class _Listing:
    def __init__(self, key: str, items: list[dict[str, Any]]) -> None:
        self.key = key
        self.items = items
        self.asked: list[Query] = []

    def matching(self, query: Query) -> list[dict[str, Any]]:
        """The items the query's ``metadata`` filter (JSON, Cinder and Manila) matches."""
        wanted = json.loads(query["metadata"]) if "metadata" in query else {}
        return [x for x in self.items if wanted.items() <= (x.get("metadata") or {}).items()]

    def answer(self, query: Query) -> dict[str, Any]:
        raise NotImplementedError

    def callback(self, request: rm.request._RequestObjectProxy, context: Any) -> Any:
        """requests-mock's ``json=`` callback: the answer, or the 404 of a gone marker."""
        raw = parse_qs(urlparse(request.url).query)
        query = {k: v[0] if len(v) == 1 else v for k, v in raw.items()}
        try:
            return self.answer(query)
        except NotFound:
            context.status_code = 404
            return {"itemNotFound": {"code": 404, "message": "marker not found"}}


class LinkedListing(_Listing):
    """Cinder's and Neutron's paging: limit, marker, a ``next`` link on a full page in
    ``links`` (``<key>_links``; Cinder's volume types say ``volume_type_links``)."""

    def __init__(
        self, key: str, items: list[dict[str, Any]], page: int, links: str | None = None
    ) -> None:
        super().__init__(key, items)
        self.page = page
        self.links = links or f"{key}_links"

    def answer(self, query: Query) -> dict[str, Any]:
        self.asked.append(dict(query))
        found = self.matching(query)
        limit = min(int(query.get("limit", self.page)), self.page)
        start = 0
        if "marker" in query:
            ids = [x["id"] for x in found]
            if query["marker"] not in ids:
                raise NotFound(query["marker"])
            start = ids.index(query["marker"]) + 1
        chunk = found[start : start + limit]
        body: dict[str, Any] = {self.key: chunk}
        # Neutron adds a "previous" link too.
        links = [{"rel": "previous", "href": f"{LINK_HOST}/{self.key}?page_reverse=True"}]
        if chunk and len(chunk) >= limit:
            after = urlencode({**query, "limit": limit, "marker": chunk[-1]["id"]}, doseq=True)
            links.append({"rel": "next", "href": f"{LINK_HOST}/{self.key}?{after}"})
        body[self.links] = links
        if query.get("with_count") == "true":  # Cinder from 3.45: counted after the page
            body["count"] = len(self.matching(query))
        return body


class CountedListing(_Listing):
    """Manila's share listing (see the module docstring)."""

    def __init__(self, key: str, items: list[dict[str, Any]], cap: int | None = None) -> None:
        super().__init__(key, items)
        self.cap = cap

    def answer(self, query: Query) -> dict[str, Any]:
        self.asked.append(dict(query))
        found = self.matching(query)
        if query.get("sort_key") == "id":
            found.sort(key=lambda x: str(x["id"]), reverse=query.get("sort_dir") == "desc")
        count = len(found)
        offset = int(query.get("offset", 0))
        if self.cap is not None:  # before Zed: common.limited(), offset with or without limit
            limit = min(int(query.get("limit", self.cap)) or self.cap, self.cap)
            found = found[offset : offset + limit]
        elif "limit" in query:  # Zed: the database's LIMIT/OFFSET, only with a limit
            found = found[offset : offset + int(query["limit"])]
        body: dict[str, Any] = {self.key: found}
        if query.get("with_count") == "true":
            body["count"] = count
        if "limit" in query and found and len(found) == int(query["limit"]):
            after = urlencode({**query, "marker": found[-1]["id"]})  # a marker it ignores
            body[f"{self.key}_links"] = [{"rel": "next", "href": f"{LINK_HOST}/shares?{after}"}]
        return body
