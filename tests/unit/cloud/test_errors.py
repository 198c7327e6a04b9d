"""Failure classification: which failures Kumo retries (transient) and which wait for
the user (terminal), Retry-After, and which cached IDs a failed create blames."""

from __future__ import annotations

import keystoneauth1.exceptions as ka_exc
import pytest
import requests
from openstack import exceptions as os_exc

from kumo.cloud import errors
from kumo.engine.errors import ReconcileError, TerminalError, TransientError, refused


def http_error(status: int, details: str = "", **headers: str) -> os_exc.HttpException:
    response = requests.Response()
    response.status_code = status
    response.headers.update(headers)
    cls = {404: os_exc.NotFoundException, 409: os_exc.ConflictException}.get(
        status, os_exc.HttpException
    )
    return cls(message=f"HTTP {status}", response=response, http_status=status, details=details)


@pytest.mark.parametrize(
    ("status", "details", "kind", "reason"),
    [
        (400, "Invalid input for field/attribute name", TerminalError, "CloudRejected"),
        (
            401,
            "The request you have made requires authentication.",
            TerminalError,
            "CloudForbidden",
        ),
        (403, "Policy doesn't allow compute:create", TerminalError, "CloudForbidden"),
        (403, "Quota exceeded for instances", TerminalError, "QuotaExceeded"),
        (413, "Quota exceeded for resources: ['cores']", TerminalError, "QuotaExceeded"),
        (413, "This request was rate-limited.", TransientError, "CloudUnavailable"),
        # Cinder's snapshot count limit names no quota.
        (
            413,
            "SnapshotLimitExceeded: Maximum number of snapshots allowed (0) exceeded",
            TerminalError,
            "QuotaExceeded",
        ),
        (404, "Instance x could not be found.", TerminalError, "NotFound"),
        (409, "Invalid state PENDING_UPDATE of loadbalancer", TransientError, "CloudBusy"),
        (429, "This request was rate-limited.", TransientError, "CloudUnavailable"),
        (500, "Unexpected API Error.", TransientError, "CloudUnavailable"),
        (502, "Bad Gateway", TransientError, "CloudUnavailable"),
        (503, "Service Unavailable", TransientError, "CloudUnavailable"),
        (504, "Gateway Timeout", TransientError, "CloudUnavailable"),
    ],
)
def test_http_statuses(status: int, details: str, kind: type, reason: str) -> None:
    error = errors.classify(http_error(status, details), "create server", "spec.image")
    assert (type(error), error.reason) == (kind, reason)
    assert error.field == "spec.image"
    assert error.message == f"spec.image: create server: {details}"


def test_only_a_quota_is_rechecked_soon() -> None:
    """A quota frees itself as the cloud finishes deletions; a bad spec does not."""
    quota = errors.classify(http_error(403, "Quota exceeded for instances"), "create server")
    rejected = errors.classify(http_error(400, "Invalid input"), "create server")
    assert isinstance(quota, TerminalError) and isinstance(rejected, TerminalError)
    assert quota.recheck == errors.QUOTA_RECHECK_SECONDS
    assert rejected.recheck is None


def test_409_asks_to_come_back_soon() -> None:
    error = errors.classify(http_error(409, "busy"), "delete pool")
    assert isinstance(error, TransientError) and error.retry_after == 2.0


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("7", 7.0), ("0.5", 0.5), ("Wed, 21 Oct 2026 07:28:00 GMT", None), ("soon", None)],
)
def test_retry_after_in_seconds_is_honoured(header: str, seconds: float | None) -> None:
    """An HTTP-date Retry-After is not understood: the engine's backoff applies then."""
    error = errors.classify(http_error(429, "slow down", **{"Retry-After": header}), "list")
    assert isinstance(error, TransientError)
    assert error.retry_after == seconds


def test_no_response_no_retry_after() -> None:
    assert errors.retry_after(os_exc.HttpException(message="x", http_status=503)) is None
    assert errors.retry_after(ValueError()) is None


@pytest.mark.parametrize(
    "raised",
    [
        ka_exc.ConnectFailure("connection refused"),
        ka_exc.ConnectTimeout("timed out"),
        requests.exceptions.ReadTimeout("read timed out"),
        RuntimeError("something else"),
    ],
)
def test_anything_without_a_status_is_unreachable_and_retried(raised: Exception) -> None:
    error = errors.classify(raised, "list servers")
    assert (type(error), error.reason) == (TransientError, "CloudUnreachable")


def test_ambiguous_name_is_terminal() -> None:
    raised = os_exc.DuplicateResource("More than one Image exists with the name 'centos79'.")
    error = errors.classify(raised, "look up image 'centos79'", "spec.image")
    assert (type(error), error.reason, error.field) == (
        TerminalError,
        "AmbiguousName",
        "spec.image",
    )


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 429])
def test_a_4xx_is_a_refusal(status: int) -> None:
    """The cloud answered that it did not do it: a create refused leaves nothing in
    doubt, whatever the error's class (a 409 and a 429 are retried, still refused)."""
    error = errors.classify(http_error(status, "Quota exceeded" if status == 413 else ""), "x")
    assert error.refused and refused(error)


@pytest.mark.parametrize(
    "raised",
    [
        http_error(500, "Unexpected API Error."),
        http_error(502, "Bad Gateway"),
        http_error(503, "Service Unavailable"),
        ka_exc.ConnectFailure("connection reset"),
        ka_exc.ConnectTimeout("timed out"),
        requests.exceptions.ReadTimeout("read timed out"),
        os_exc.DuplicateResource("More than one Image exists with the name 'centos79'."),
        RuntimeError("something else"),
    ],
)
def test_a_5xx_or_a_lost_answer_is_no_refusal(raised: Exception) -> None:
    """Whether the cloud did it is open: the answer was an error or never came."""
    error = errors.classify(raised, "create server")
    assert not error.refused and not refused(error)


def test_only_a_classified_refusal_counts() -> None:
    """The kinds never see the SDK's exceptions: ``refused`` reads Kumo's flag only."""
    assert not refused(http_error(400, "raw, unclassified"))
    assert not refused(TimeoutError())
    assert not refused(TerminalError("ImageNotFound", "image 'x' not found"))
    assert refused(TerminalError("CloudRejected", "bad", refused=True))
    assert refused(TransientError("CloudBusy", "busy", refused=True))


def test_reconcile_errors_pass_through_unchanged() -> None:
    original: ReconcileError = TerminalError("ImageNotFound", "image 'x' not found")
    assert errors.classify(original, "anything") is original


def test_messages_are_one_line_and_bounded() -> None:
    error = errors.classify(http_error(400, "a\n  b\t" + "x" * 1000), "create")
    assert "\n" not in error.message
    assert error.message.startswith("create: a b x")
    assert len(error.message) <= len("create: ") + 400


@pytest.mark.parametrize(
    ("status", "details", "blamed"),
    [
        (400, "Image img-1 could not be found.", ["img-1"]),
        (400, "Network net-2 could not be found", ["net-2"]),
        (400, "Invalid key_name provided.", []),  # about something else
        (400, "Security group default not found.", []),  # names none of the IDs
        (404, "Could not find Zone", ["img-1", "net-2"]),  # a 404 blames them all
        (409, "Image img-1 could not be found", []),
        (503, "not found", []),
    ],
)
def test_missing_ids(status: int, details: str, blamed: list[str]) -> None:
    assert errors.missing_ids(http_error(status, details), ["img-1", "net-2", ""]) == blamed


def test_missing_ids_without_an_error() -> None:
    assert errors.missing_ids(None, ["img-1"]) == []
