"""The kopf wiring: what the registry hands kopf."""

from __future__ import annotations

import asyncio
import inspect
import os
from pathlib import Path
from types import SimpleNamespace

import kopf
import pytest
import yaml
from prometheus_client import REGISTRY

from kumo import __version__
from kumo.api.kinds import KINDS
from kumo.runtime.operator import Lifecycle, OperatorOptions, build_registry


def test_watch_event_handlers_run_on_the_event_loop() -> None:
    """kopf runs a plain function in a worker thread; the store and the work queue
    belong to the event loop (a listing raced a write there: an event was lost). Every
    watch handler must be a coroutine."""
    handlers = build_registry(None)._watching.get_all_handlers()  # type: ignore[arg-type]
    ids = {h.id for h in handlers}
    assert {f"watch-{info.kind}" for info in KINDS} <= ids
    for handler in handlers:
        assert inspect.iscoroutinefunction(handler.fn), handler.id


def test_kopfs_login_names_the_process_as_its_lease_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One identity per process, in the Lease and in the User-Agent of every request
    (kopf's and Kumo's own client), so the API server's audit log tells who wrote."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "kumo", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "kumo", "context": {"cluster": "lab", "user": "kumo"}}],
        "current-context": "kumo",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setenv("POD_NAME", "kumo-7d9f-x2")
    lifecycle = Lifecycle(OperatorOptions())
    assert lifecycle.identity.startswith(f"kumo-7d9f-x2_{os.getpid()}_")
    assert Lifecycle(OperatorOptions()).identity != lifecycle.identity, "unique per start"
    assert Lifecycle(OperatorOptions(identity="given")).identity == "given"

    (login,) = [
        h
        for h in build_registry(lifecycle)._activities.get_all_handlers()
        if h.activity.value == "authentication"
    ]
    info = asyncio.run(login.fn(settings=kopf.OperatorSettings()))
    assert info.server == "https://127.0.0.1:6443"
    assert info.as_http_headers()["User-Agent"] == f"kumo/{__version__} ({lifecycle.identity})"


def test_the_leader_gauge_follows_the_role_and_the_build_is_named() -> None:
    def leader() -> float | None:
        return REGISTRY.get_sample_value("kumo_leader")

    lifecycle = Lifecycle(OperatorOptions(identity="me"))
    assert leader() == 0, "starting: not leading"
    lifecycle.controller = object()  # type: ignore[assignment]
    lifecycle.synced = True
    assert leader() == 1, "no election: leading once synced"
    lifecycle.elector = SimpleNamespace(leading=False, identity="me", healthy=True)  # type: ignore[assignment]
    assert leader() == 0, "standby"
    lifecycle.elector.leading = True
    assert leader() == 1
    assert REGISTRY.get_sample_value("kumo_build_info", {"version": __version__}) == 1
