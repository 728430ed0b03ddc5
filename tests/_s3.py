"""An S3-compatible server on loopback (moto's server mode) for object-storage tests and benches.

Skips cleanly when moto is not installed (``pip install 'turnkit[s3-test]'``).
"""

from __future__ import annotations

import http.client
import importlib.util
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["S3Server", "create_gate", "moto_available", "s3_server"]


def moto_available() -> bool:
    """Whether moto's server mode can be started here."""
    return importlib.util.find_spec("moto") is not None and importlib.util.find_spec("flask") is not None


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint and the LanceDB storage options that reach it."""

    endpoint: str

    @property
    def storage_options(self) -> dict[str, str]:
        return {
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
            "aws_endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }

    def new_bucket(self) -> str:
        """Create an empty bucket and return an ``s3://`` database URI in it."""
        name = f"tk-{uuid.uuid4().hex[:12]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10):
            pass
        return f"s3://{name}/db"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """Start ``moto.server`` on a free loopback port for the duration of the block."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        yield S3Server(endpoint)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class CreateGate:
    """A proxy to the server that stops a create between Lance's two "is it there yet?" checks.

    Lance lists a table's ``_versions/`` when a create starts and again just
    before it commits; a table that appears in between gets the create
    committed on top of it. Through this proxy, the third listing of
    ``<collection>.lance/_versions/`` in a row (turnkit's open, then the
    create's two) waits until `release`, so a test can create the table
    meanwhile from elsewhere. ``held`` is set while it waits.
    """

    def __init__(self, server: S3Server, collection: str) -> None:
        self.held = threading.Event()
        self.release = threading.Event()
        self._upstream = server.endpoint.rsplit(":", 1)[1]
        self._versions = f"prefix=db%2F{collection}.lance%2F_versions%2F"
        self._streak = 0
        gate = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                gate._wait_if_second_check(self.command, self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection("127.0.0.1", int(gate._upstream), timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                finally:
                    upstream.close()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                size = response.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", size or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._proxy = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.storage_options = {
            **server.storage_options,
            "aws_endpoint": f"http://127.0.0.1:{self._proxy.server_address[1]}",
        }
        threading.Thread(target=self._proxy.serve_forever, daemon=True).start()

    def _wait_if_second_check(self, method: str, path: str) -> None:
        if method != "GET" or self._versions not in path or "delimiter" in path:
            self._streak = 0
            return
        self._streak += 1
        if self._streak == 3 and not self.held.is_set():
            self.held.set()
            self.release.wait(60)

    def close(self) -> None:
        self.release.set()
        self._proxy.shutdown()
        self._proxy.server_close()


@contextmanager
def create_gate(server: S3Server, collection: str) -> Iterator[CreateGate]:
    """A `CreateGate` on ``collection`` for the duration of the block."""
    gate = CreateGate(server, collection)
    try:
        yield gate
    finally:
        gate.close()
