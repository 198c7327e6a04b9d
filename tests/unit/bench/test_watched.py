"""The harness's watch of Kumo's objects (bench.lab.Watched), against a tiny in-process
HTTP server that answers a list, then a watch stream, as the apiserver does."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.lab import Kube, Watched

PATH = "/apis/kumo.dev/v1alpha1/namespaces/ns/virtualmachines"


def vm(name: str, version: str, ready: bool = False) -> dict:
    status = "True" if ready else "False"
    return {
        "metadata": {"name": name, "resourceVersion": version},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


class Apiserver(BaseHTTPRequestHandler):
    """A list answers what ``state`` holds at version 5; the first watch sends three
    changes and a bookmark (applying them to ``state``, so a list after it agrees) and
    stays open until ``release`` is set, so nothing but the stream can bring them; a
    later one sends nothing."""

    requests: list[str] = []
    state: dict[str, dict] = {}
    release = threading.Event()

    def do_GET(self) -> None:
        self.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if "watch=1" not in self.path:
            listed = {"metadata": {"resourceVersion": "5"}, "items": list(self.state.values())}
            self.wfile.write(json.dumps(listed).encode())
            return
        if len([r for r in self.requests if "watch=1" in r]) > 1:
            return
        for kind, body in (
            ("ADDED", vm("b", "6")),
            ("MODIFIED", vm("a", "7", ready=True)),
            ("BOOKMARK", {"metadata": {"resourceVersion": "8"}}),
            ("DELETED", vm("c", "9")),
        ):
            name = body["metadata"].get("name")
            if kind == "DELETED":
                self.state.pop(name)
            elif name:
                self.state[name] = body
            self.wfile.write(json.dumps({"type": kind, "object": body}).encode() + b"\n")
            self.wfile.flush()
        self.release.wait(30)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def kube() -> Iterator[Kube]:
    Apiserver.requests = []
    Apiserver.state = {"a": vm("a", "1"), "c": vm("c", "2")}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Apiserver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Kube.__new__(Kube)
    client.server = f"http://127.0.0.1:{server.server_address[1]}"
    client.token = "t"
    client.ctx = ssl.create_default_context()
    Apiserver.release = threading.Event()
    yield client
    Apiserver.release.set()
    server.shutdown()


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_the_watch_lists_once_then_applies_each_change_from_the_lists_version(
    kube: Kube,
) -> None:
    watched = Watched(kube, PATH)
    try:
        assert watched.synced.wait(10)

        def state() -> dict[str, str]:
            return {
                i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in watched.items()
            }

        eventually(lambda: state() == {"a": "7", "b": "6"})
        (a,) = [i for i in watched.items() if i["metadata"]["name"] == "a"]
        assert a["status"]["conditions"][0]["status"] == "True"
        assert Apiserver.requests[0] == PATH
        assert len(Apiserver.requests) == 2, "one list, then the stream: no list per look"
        assert Apiserver.requests[1].startswith(f"{PATH}?watch=1")
        assert "resourceVersion=5" in Apiserver.requests[1]
    finally:
        watched.close()
