"""Fixtures of the contract tests: a media origin, an egress proxy that lets only loopback
through, and `attach-fetch serve` sending every fetch through that proxy.

Nothing here reaches beyond 127.0.0.1: the service is started with `--proxy` pointing at
`LoopbackOnlyProxy`, which tunnels CONNECT only to 127.0.0.1 / ::1 / localhost and answers 403
to anything else, so a URL that names another host is neither resolved nor connected to by the
service. The proxy records every target it was asked for (`test_egress.py` checks both lists).
"""
import functools
import http.server
import os
import re
import select
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "PythonSupport"))
BINARY = ROOT / ".build" / "debug" / "attach-fetch"
DOCUMENT = ROOT / "Sources" / "AttachFetchService" / "OpenAPI" / "openapi.json"
MEDIA = ROOT / "TestMedia"
LOOPBACK = {"127.0.0.1", "::1", "localhost", "[::1]"}


from loopback_origin import Origin  # noqa: E402  (Tests/PythonSupport)


class LoopbackOnlyProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels only to loopback; every other target
    gets 403 and is never resolved. `allowed` and `refused` list the targets asked for."""

    def __init__(self):
        self.allowed, self.refused = [], []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                head = b""
                while b"\r\n\r\n" not in head and len(head) < 16384:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                first, _, headers = head.partition(b"\r\n")
                parts = first.decode("latin-1").split(" ")
                if len(parts) != 3:
                    self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                method, target, version = parts
                tunnel = method == "CONNECT"
                if tunnel:
                    authority, path = target, ""
                else:
                    # Plain http through a proxy: an absolute URI.
                    match = re.match(r"^http://([^/]+)(/.*)?$", target)
                    if not match:
                        self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        return
                    authority, path = match.group(1), match.group(2) or "/"
                    if ":" not in authority.rsplit("]", 1)[-1]:
                        authority += ":80"
                host, _, port = authority.rpartition(":")
                if host not in LOOPBACK or not port.isdigit():
                    proxy.refused.append(authority)
                    self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                proxy.allowed.append(authority)
                try:
                    upstream = socket.create_connection(("::1" if host in ("::1", "[::1]") else "127.0.0.1", int(port)), timeout=10)
                except OSError:
                    self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                if tunnel:
                    self.request.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    rest = head.split(b"\r\n\r\n", 1)[1]
                else:
                    # One request per connection: the origin closes after answering, and so does this.
                    kept = [line for line in headers.split(b"\r\n") if line and not line.lower().startswith((b"connection:", b"proxy-connection:"))]
                    body = head.split(b"\r\n\r\n", 1)[1]
                    lines = [f"{method} {path} {version}".encode("latin-1")] + [l for l in kept if l] + [b"Connection: close"]
                    rest = b"\r\n".join(line for line in lines if b"\r\n\r\n" not in line).split(b"\r\n\r\n")[0] + b"\r\n\r\n" + body
                if rest:
                    upstream.sendall(rest)
                sockets = [self.request, upstream]
                try:
                    while True:
                        readable, _, _ = select.select(sockets, [], [], 30)
                        if not readable:
                            return
                        for source in readable:
                            data = source.recv(65536)
                            if not data:
                                return
                            (upstream if source is self.request else self.request).sendall(data)
                except OSError:
                    return
                finally:
                    upstream.close()

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Service:
    """`attach-fetch serve` on 127.0.0.1 (port 0), every fetch through `proxy`, publishing to a
    directory of its own (so that `?rewrite=true` is a valid request), unless `publishing` is
    false."""

    def __init__(self, proxy, work, extra=(), publishing=True):
        self.publish = work / "published"
        self.publish.mkdir()
        env = {**os.environ, "TMPDIR": str(work)}
        publish = ["--publish-dir", str(self.publish), "--public-base", "http://127.0.0.1:1/media/"] if publishing else []
        self.process = subprocess.Popen(
            [str(BINARY), "serve", "--port", "0", "--host", "127.0.0.1", "--allow-private-network",
             "--proxy", f"http://127.0.0.1:{proxy.port}", "--deadline", "5", "--max-batches", "64",
             *publish, *extra],
            stderr=subprocess.PIPE, text=True, env=env)
        for line in self.process.stderr:
            if "attach-fetch: listening on " in line:
                self.base = line.strip().split("listening on ")[1]
                break
        else:
            raise RuntimeError("attach-fetch serve did not start")
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def origin():
    server = Origin(MEDIA)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def proxy():
    server = LoopbackOnlyProxy()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def service(proxy, tmp_path_factory):
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: run swift build first")
    work = tmp_path_factory.mktemp("serve")
    # A media key, so that "encrypt": true (a schema-valid request) is served and fuzzed too.
    key = work / "media.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    running = Service(proxy, work, extra=["--media-key-file", str(key)])
    yield running
    running.stop()


@pytest.fixture(scope="session")
def keyless_service(proxy, tmp_path_factory):
    """A service without a media key and without publishing: `encrypt` true and `rewrite=true`
    are valid by the document and must be answered as it says (409 notConfigured), not refused
    as bad requests."""
    running = Service(proxy, tmp_path_factory.mktemp("serve-keyless"), publishing=False)
    yield running
    running.stop()

