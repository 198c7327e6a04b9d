"""dev/shim/proxy.py on loopback: a VIP forwards to its members in turn, skips one that
does not answer, refuses every connection while it has none, and drops a connection
whose member left the pool."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest
from proxy import Proxy

VIP = "127.0.0.2"


class Named(socketserver.BaseRequestHandler):
    """Answers each line with its server's name, until the client closes."""

    def handle(self) -> None:
        with self.request.makefile("rb") as lines:
            for line in lines:
                self.request.sendall(self.server.name + b":" + line)  # type: ignore[attr-defined]


def member(name: bytes) -> tuple[socketserver.ThreadingTCPServer, tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Named)
    server.daemon_threads = True
    server.name = name  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, ("127.0.0.1", server.server_address[1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind((VIP, 0))
        return int(s.getsockname()[1])


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    running = Proxy()
    yield running
    running.close()


def ask(port: int, line: bytes = b"hello\n") -> bytes:
    """One line through the VIP, and the answer ("" when the proxy closed at once)."""
    with socket.create_connection((VIP, port), timeout=5) as conn:
        try:
            conn.sendall(line)
            return conn.makefile("rb").readline()
        except ConnectionResetError:
            return b""


def test_new_connections_go_to_the_members_in_turn(proxy: Proxy) -> None:
    a, a_addr = member(b"a")
    b, b_addr = member(b"b")
    port = free_port()
    assert proxy.update({(VIP, port): [a_addr, b_addr]}) == {}
    answers = sorted(ask(port) for _ in range(4))
    assert answers == [b"a:hello\n", b"a:hello\n", b"b:hello\n", b"b:hello\n"]
    a.shutdown()
    b.shutdown()


def test_a_member_that_does_not_answer_is_skipped(proxy: Proxy) -> None:
    b, b_addr = member(b"b")
    dead = ("127.0.0.1", free_port())  # nothing listens there
    port = free_port()
    proxy.update({(VIP, port): [dead, b_addr]})
    assert {ask(port) for _ in range(3)} == {b"b:hello\n"}
    b.shutdown()


def test_without_members_the_vip_is_an_outage_until_one_is_added(proxy: Proxy) -> None:
    a, a_addr = member(b"a")
    port = free_port()
    proxy.update({(VIP, port): []})
    assert ask(port) == b""
    proxy.update({(VIP, port): [a_addr]})
    assert ask(port) == b"a:hello\n"
    assert proxy.members() == {(VIP, port): [a_addr]}
    a.shutdown()


def test_a_member_leaving_the_pool_loses_its_open_connections(proxy: Proxy) -> None:
    a, a_addr = member(b"a")
    b, b_addr = member(b"b")
    port = free_port()
    proxy.update({(VIP, port): [a_addr]})
    with socket.create_connection((VIP, port), timeout=5) as conn:
        lines = conn.makefile("rb")
        conn.sendall(b"one\n")
        assert lines.readline() == b"a:one\n"
        proxy.update({(VIP, port): [b_addr]})
        assert lines.readline() == b""  # closed by the proxy
    assert ask(port) == b"b:hello\n"
    a.shutdown()
    b.shutdown()


def test_a_vip_no_longer_wanted_stops_listening(proxy: Proxy) -> None:
    port = free_port()
    proxy.update({(VIP, port): []})
    proxy.update({})
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((VIP, port), timeout=5).close()
