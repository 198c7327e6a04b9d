"""cloud/pages.py against fake listings that page as the services do (tests/unit/cloud/
paged.py): every item is seen whatever the page size, a listing that fits in a page
costs one call, and a listing that moved between its pages is started over, never
returned partial."""

from __future__ import annotations

from typing import Any

import pytest

from kumo.cloud import pages
from kumo.engine.errors import TransientError
from tests.unit.cloud.paged import CountedListing, LinkedListing, NotFound, volume


def settled(x: dict[str, Any]) -> bool:
    return x.get("status") != "deleting"


def ids(found: list[dict[str, Any]]) -> list[str]:
    return [x["id"] for x in found]


def get_from(listing: LinkedListing | CountedListing, path: str = "/volumes/detail") -> pages.Get:
    """A ``pages.Get`` on the fake; it fails when asked for another path than ``path``."""

    def get(asked: str, query: dict[str, Any]) -> Any:
        assert asked == path, "the listing's own path, not the link's"
        return listing.answer(query)

    return get


# -- next links (Cinder, Neutron) -------------------------------------------------------------


@pytest.mark.parametrize("total", [0, 1, 4, 5, 6, 12, 23])
def test_every_item_is_seen_whatever_the_page_size(total: int) -> None:
    items = [volume(n) for n in range(total)]
    listing = LinkedListing("volumes", items, page=5)
    found = pages.linked(get_from(listing), "/volumes/detail", "volumes")
    assert ids(found) == ids(items)
    # One call per page; a listing that fills its last page exactly asks once more.
    assert len(listing.asked) == total // 5 + 1


@pytest.mark.parametrize(("total", "calls"), [(0, 1), (4, 1), (5, 1), (6, 2), (10, 2), (11, 3)])
def test_with_cinders_count_a_listing_costs_one_call_per_page_begun(total: int, calls: int) -> None:
    """A full page comes with a link, but when the count says the listing is complete
    there is no empty page to ask for: 1,000 volumes at 1,000 a page are one call."""
    items = [volume(n) for n in range(total)]
    listing = LinkedListing("volumes", items, page=5)
    found = pages.linked(get_from(listing), "/volumes/detail", "volumes", settled=settled)
    assert ids(found) == ids(items)
    assert len(listing.asked) == calls
    assert all(q["with_count"] == "true" for q in listing.asked)


def test_a_deletion_ending_before_the_count_does_not_end_the_listing_early() -> None:
    """Cinder counts after it lists: a volume listed as deleting and gone before the
    count makes it equal to a full page while a sixth volume waits on page two."""
    items = [volume(n) for n in range(6)]
    items[0]["status"] = "deleting"
    listing = LinkedListing("volumes", items, page=5)
    answer = listing.answer

    def deleted_after_the_first_page(query: dict[str, Any]) -> Any:
        body = answer(query)
        if "marker" not in query and len(listing.items) == 6:
            del listing.items[0]  # listed in page one, gone before the count
            body["count"] = len(listing.items)
        return body

    listing.answer = deleted_after_the_first_page  # type: ignore[method-assign]
    found = pages.linked(get_from(listing), "/volumes/detail", "volumes", settled=settled)
    assert "vol-0005" in ids(found), "the sixth volume, on page two"


def test_a_listing_that_fits_in_one_page_costs_one_call() -> None:
    listing = LinkedListing("volumes", [volume(n) for n in range(4)], page=1000)
    pages.linked(get_from(listing), "/volumes/detail", "volumes", {"metadata": '{"kumo": "x"}'})
    assert listing.asked == [{"metadata": '{"kumo": "x"}'}], "the query as before: no limit"


def test_the_next_pages_keep_the_filters_and_take_the_links_marker_and_limit() -> None:
    items = [volume(n, owner="uid-a" if n % 2 else "uid-b") for n in range(20)]
    listing = LinkedListing("volumes", items, page=3)
    query = {"metadata": '{"kumo-owner": "uid-a"}'}
    found = pages.linked(get_from(listing), "/volumes/detail", "volumes", query)
    assert ids(found) == [f"vol-{n:04d}" for n in range(1, 20, 2)]
    assert listing.asked[1] == {**query, "limit": "3", "marker": "vol-0005"}


def test_a_marker_gone_between_two_pages_starts_the_listing_over() -> None:
    """Cinder and Neutron answer 404 for a marker whose item was deleted after the page
    that named it: the listing starts over and lists what is there now."""
    items = [volume(n) for n in range(8)]
    listing = LinkedListing("volumes", items, page=5)
    answer = listing.answer

    def deleting_the_marker(query: dict[str, Any]) -> Any:
        if query.get("marker") == "vol-0004" and listing.items[4]["id"] == "vol-0004":
            del listing.items[4]  # deleted while the first page was on its way
        return answer(query)

    listing.answer = deleting_the_marker  # type: ignore[method-assign]
    found = pages.linked(get_from(listing), "/volumes/detail", "volumes")
    assert ids(found) == [f"vol-{n:04d}" for n in (0, 1, 2, 3, 5, 6, 7)]


def test_a_listing_that_keeps_moving_fails_transiently_never_partial() -> None:
    def moving(path: str, query: dict[str, Any]) -> Any:
        if "marker" in query:
            raise NotFound(query["marker"])
        return {"volumes": [volume(1)], "volumes_links": [{"rel": "next", "href": "/v?marker=x"}]}

    with pytest.raises(TransientError) as raised:
        pages.linked(moving, "/volumes/detail", "volumes")
    assert raised.value.reason == "ListingChanged"


def test_a_failing_first_page_is_the_callers_error() -> None:
    """Only a follow-up page's 404 means the listing moved; the first page's is an answer
    the caller classifies (an Octavia pool gone, a marker the caller chose)."""

    def gone(path: str, query: dict[str, Any]) -> Any:
        raise NotFound("pool")

    with pytest.raises(NotFound):
        pages.linked(gone, "/lbaas/pools/p/members", "members", {"marker": "m"})


def test_a_link_that_repeats_its_marker_is_no_endless_loop() -> None:
    def looping(path: str, query: dict[str, Any]) -> Any:
        return {"volumes": [volume(1)], "volumes_links": [{"rel": "next", "href": "/v?marker=a"}]}

    with pytest.raises(RuntimeError, match="came twice"):
        pages.linked(looping, "/volumes/detail", "volumes")


def test_the_next_link_is_found_in_any_links_list() -> None:
    """Cinder names its volume types' list ``volume_type_links``; Neutron adds a
    ``previous`` link; a link without a marker (Glance's style) is none of these."""
    href = "http://cinder:8776/v3/p/types?marker=t5&limit=5"
    assert pages.next_page({"volume_type_links": [{"rel": "next", "href": href}]}) == {
        "marker": "t5",
        "limit": "5",
    }
    assert pages.next_page({"x_links": [{"rel": "previous", "href": href}]}) is None
    assert pages.next_page({"x_links": [{"rel": "next", "href": "/v2/images"}]}) is None
    assert pages.next_page({"volumes": [], "count": 3}) is None


# -- counts and offsets (Manila) ---------------------------------------------------------------


def share(n: int) -> dict[str, Any]:
    return {"id": f"share-{n:04d}", "metadata": {"kumo": "managed"}}


def test_manila_zed_answers_every_share_in_one_call() -> None:
    items = [share(n) for n in range(23)]
    listing = CountedListing("shares", items)
    found = pages.counted(get_from(listing, "/shares/detail"), "/shares/detail", "shares")
    assert ids(found) == ids(items)
    (asked,) = listing.asked
    assert asked["with_count"] == "true" and "limit" not in asked


@pytest.mark.parametrize("total", [0, 3, 5, 6, 12])
def test_a_manila_that_cuts_its_answers_is_read_by_offsets(total: int) -> None:
    """Before Zed, Manila cut a share listing at ``osapi_max_limit`` and said nothing (a
    link only for a request's own limit, with a marker it ignores): the count tells."""
    items = [share(n) for n in range(total)]
    listing = CountedListing("shares", items, cap=5)
    found = pages.counted(get_from(listing, "/shares/detail"), "/shares/detail", "shares")
    assert sorted(ids(found)) == ids(items)
    assert len(listing.asked) == max(1, -(-total // 5))
    assert [q.get("offset") for q in listing.asked[1:]] == list(range(5, total, 5))


def test_a_share_count_that_moves_between_pages_starts_the_listing_over() -> None:
    listing = CountedListing("shares", [share(n) for n in range(8)], cap=5)
    answer = listing.answer

    def creating_one(query: dict[str, Any]) -> Any:
        if query.get("offset") == 5 and len(listing.items) == 8:
            # Created between the two pages, sorted into page one: page two would show
            # page one's last share again and one share would be seen by no page.
            listing.items.insert(3, {"id": "share-0002a", "metadata": {"kumo": "managed"}})
        return answer(query)

    listing.answer = creating_one  # type: ignore[method-assign]
    found = pages.counted(get_from(listing, "/shares/detail"), "/shares/detail", "shares")
    assert ids(found) == ids(listing.items) and len(found) == 9
    assert len(listing.asked) == 2 + 2, "two pages, then two pages again"


def test_a_manila_without_counts_is_taken_at_its_word() -> None:
    def old(path: str, query: dict[str, Any]) -> Any:
        return {"shares": [share(1), share(2)]}

    assert ids(pages.counted(old, "/shares/detail", "shares")) == ["share-0001", "share-0002"]
