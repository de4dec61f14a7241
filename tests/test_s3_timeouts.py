"""A frozen object store ends a command: an S3 endpoint that accepts connections and never answers kept
`rl ingest --store s3://…` running past 590 s (a PUT waited for ``100 Continue`` with no limit; every other
request was retried 5 x 5 times, 15 s each). Every request has connect and read timeouts and a bounded number of
attempts ($RL_S3_CONNECT_TIMEOUT_S, $RL_S3_READ_TIMEOUT_S, $RL_S3_ATTEMPTS), then one ``Error:`` line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from _support import FIXTURES

pytest.importorskip("s3fs", reason="an s3:// store needs s3fs")
ERT = sorted((FIXTURES / "ert").glob("*.json"))[0]
CLI = "from rooflake.cli import main; main()"


@pytest.fixture()
def frozen() -> Iterator[str]:
    """The URL of an endpoint on loopback that accepts every connection and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for c in held:
            c.close()
        server.close()


def _env(endpoint: str, **limits: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RL_S3_")) and k != "RL_STORE"}
    env.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    return {**env, **limits}


@pytest.mark.parametrize("args", [["ingest", str(ERT)], ["runs"]])
def test_a_frozen_endpoint_is_one_error_line_within_the_limits(frozen: str, args: list[str]) -> None:
    env = _env(frozen, RL_S3_CONNECT_TIMEOUT_S="0.5", RL_S3_READ_TIMEOUT_S="0.5", RL_S3_ATTEMPTS="2")
    start = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", CLI, *args, "--store", "s3://frozen/store"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    took = time.monotonic() - start
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: store s3://frozen/store"), r.stderr[-2000:]
    assert "did not answer" in lines[0] and "RL_S3_READ_TIMEOUT_S" in lines[0]
    assert took < 60, took


@pytest.mark.parametrize("name, value", [("RL_S3_ATTEMPTS", "0"), ("RL_S3_READ_TIMEOUT_S", "soon")])
def test_a_wrong_limit_names_its_variable(frozen: str, name: str, value: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", CLI, "runs", "--store", "s3://frozen/store"],
        env=_env(frozen, **{name: value}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and name in lines[0], r.stderr[-2000:]
