"""Every page of a listing, so that nothing past a service's page size looks gone.

Cinder answers a listing with at most ``osapi_max_limit`` items (1,000 by default), and
Neutron with at most ``pagination_max_limit`` (no limit by default). Read as complete,
the first page would make everything past it look deleted: the watch would mark it
GONE, adoption would miss it, a finalize without an ID could release a live volume. So
the adapter's listings of those services (and Manila's) go through here; each runs in
one of the adapter's threads (blocking I/O through ``get``), as one ``_call``:

- :func:`linked` (Cinder, Neutron): a full page carries a ``next`` link in its
  ``*_links`` list (``volumes_links``, ``volume_type_links``, ``networks_links``...).
  Kumo sends its own path and filters again with the link's ``marker`` (and ``limit``),
  not the link itself: its host is whatever the service believes it is called, not
  always what Kumo reaches (a proxy, an internal name). A page without a link is the
  last, so a listing that fits in one page costs one call, as before. A link comes
  with every *full* page, so one that fills its page exactly would cost one more
  (empty) call; where the service counts (``with_count``: Cinder's volumes from 3.45)
  the listing ends as soon as it holds as many items as the count, so it costs one
  call per page begun — 1,000 volumes one call, 1,001 two. Cinder counts after it
  lists, so the count is one short of the items listed when one of them went in
  between (its deletion ended, its marker was removed) while one more waits on the
  next page: a listing holding an item that is not ``settled`` (a volume being
  deleted) reads the next page anyway. What is left: a marker removed by hand within
  those milliseconds while the listing is exactly one item past a page hides that last
  item for one listing.
- :func:`counted` (Manila): a share listing has no ``next`` link to follow. Manila gives
  one only when the request named a ``limit``, and its shares ignore the marker in it
  (following it repeats the page). Zed answers every share at once; older releases cut
  the answer at ``osapi_max_limit`` and say nothing. So Kumo asks ``with_count`` (2.42:
  the number of matches before any cut) and, while it holds fewer, asks for the rest by
  ``offset`` (with a ``limit``: Zed applies an offset only with one), sorted by ID so
  that the pages do not depend on ties between creation times.

Otherwise a listing is never returned partial. A follow-up page refused because its
marker went (Cinder and Neutron answer 404, or 400, when the last item of the previous
page was deleted in between), or Manila's count moving between pages, starts the
listing over; after :data:`ATTEMPTS` tries it fails as a transient error, and the watch
keeps what it had until its next listing. (Offsets cannot tell one share created and
another deleted between two pages; Manila offers nothing better, and only its releases
before Zed cut a share listing at all.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kumo.engine.errors import TransientError

#: One GET of a path with query parameters: the answer's JSON body (errors raised).
Get = Callable[[str, dict[str, Any]], Any]

#: Tries of one listing whose pages moved under it before it fails (transiently).
ATTEMPTS = 3
#: Statuses with which a follow-up page says its marker is gone.
MARKER_GONE = (400, 404)


class PagesMoved(Exception):
    """The listing changed between two of its pages: start it over."""


def linked(
    get: Get,
    path: str,
    key: str,
    params: Mapping[str, Any] | None = None,
    settled: Callable[[Any], bool] | None = None,
) -> list[Any]:
    """Every ``key`` item of ``path``, following the ``next`` links (Cinder, Neutron).
    With ``settled``, the service's count is asked for too, and the listing ends once
    it holds that many items, all of them settled (see the module)."""
    query = {**(params or {}), **({"with_count": "true"} if settled else {})}
    return _again(lambda: _linked(get, path, key, query, settled), path)


def counted(get: Get, path: str, key: str, params: Mapping[str, Any] | None = None) -> list[Any]:
    """Every ``key`` item of ``path`` by Manila's count and offsets (see the module)."""
    return _again(lambda: _counted(get, path, key, dict(params or {})), path)


def _again(listing: Callable[[], list[Any]], path: str) -> list[Any]:
    for _ in range(ATTEMPTS):
        try:
            return listing()
        except PagesMoved:
            continue
    raise TransientError(
        "ListingChanged", f"list {path}: the listing changed between its pages {ATTEMPTS} times"
    )


def _linked(
    get: Get, path: str, key: str, params: dict[str, Any], settled: Callable[[Any], bool] | None
) -> list[Any]:
    found: list[Any] = []
    query = params
    markers: set[str] = set()
    while True:
        try:
            body = get(path, query)
        except Exception as error:
            if query is not params and getattr(error, "status_code", None) in MARKER_GONE:
                raise PagesMoved from error
            raise
        page = body.get(key) or []
        found += page
        follow = next_page(body)
        if not page or follow is None or _complete(body, found, settled):
            return found
        marker = follow["marker"]
        if marker in markers:
            raise RuntimeError(f"list {path}: the next page's marker {marker} came twice")
        markers.add(marker)
        query = {**params, **follow}


def _complete(
    body: Mapping[str, Any], found: list[Any], settled: Callable[[Any], bool] | None
) -> bool:
    """Does the answer's count say ``found`` is the whole listing?"""
    return settled is not None and body.get("count") == len(found) and all(map(settled, found))


def next_page(body: Mapping[str, Any]) -> dict[str, str] | None:
    """The ``marker`` (and ``limit``) of the ``next`` link in an answer's ``*_links``
    lists, or None on the last page."""
    for name, links in body.items():
        if not name.endswith("_links") or not isinstance(links, list):
            continue
        for link in links:
            if not isinstance(link, dict) or link.get("rel") != "next":
                continue
            query = parse_qs(urlsplit(str(link.get("href") or "")).query)
            if query.get("marker"):
                follow = {"marker": query["marker"][-1]}
                if query.get("limit"):
                    follow["limit"] = query["limit"][-1]
                return follow
    return None


def _counted(get: Get, path: str, key: str, params: dict[str, Any]) -> list[Any]:
    params = {**params, "with_count": "true", "sort_key": "id", "sort_dir": "asc"}
    body = get(path, params)
    found = list(body.get(key) or [])
    count = body.get("count")
    if not isinstance(count, int):  # no count (a Manila before 2.42): its one answer
        return found
    size = len(found)
    while len(found) < count:
        if not size:
            raise PagesMoved
        more = get(path, {**params, "limit": size, "offset": len(found)})
        page = more.get(key) or []
        if more.get("count") != count or not page:
            raise PagesMoved
        found += page
    if len(found) > size and len({x["id"] for x in found}) != len(found):
        raise PagesMoved  # an item moved from one page to the next
    return found
