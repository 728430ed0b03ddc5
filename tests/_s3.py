"""An S3-compatible server on loopback (moto's server mode) for object-storage tests and benches.

Skips cleanly when moto is not installed (``pip install 'turnkit[s3-test]'``).
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["S3Server", "moto_available", "s3_server"]


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
