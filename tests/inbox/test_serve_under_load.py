"""``loopkit serve`` holds under load (SPEC §17): a few thousand connections that send half a
request header neither use up its file descriptors nor keep a real, authenticated request
from being answered within a second; they are dropped once their headers are overdue.

Everything is on 127.0.0.1, bounded in count and time, and closed at the end."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loopkit.inbox.guard import HEADER_TIMEOUT, limits, most_open

from helpers import LOOPKIT, clean_env, wait_until

HALF = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow"  # the headers never end
# Runs ARGV with RLIMIT_NOFILE's soft limit set to LIMIT: serve as a service manager starts it.
WITH_NOFILE = (
    "import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


class Serve:
    def __init__(self, tmp_path: Path, nofile: int) -> None:
        out = tmp_path / "serve.out"
        self.out = out
        with out.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WITH_NOFILE, str(nofile), str(LOOPKIT), "serve",
                 "--listen", "127.0.0.1:0"],
                env=clean_env(), stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                start_new_session=True,
            )  # fmt: skip
        found = wait_until(lambda: re.search(r"http://[\d.]+:(\d+)", out.read_text()), 20, "up")
        assert isinstance(found, re.Match)
        self.base, self.port = found.group(0), int(found.group(1))
        self.token = (Path(os.environ["LOOPKIT_HOME"]) / "inbox.token").read_text().strip()
        # Serving: the line above is printed before uvicorn's loop opens its descriptors.
        assert httpx.get(f"{self.base}/healthz", timeout=10).text == "ok\n"

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def unaccepted(self) -> int:
        """Connections waiting in the kernel's listen queue for serve to accept them: the
        listening socket's receive queue in /proc/net/tcp."""
        port = f"{self.port:04X}"
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(f":{port}") and fields[3] == "0A":  # LISTEN
                return int(fields[4].split(":")[1], 16)
        raise AssertionError(f"serve does not listen on port {self.port}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def room() -> Iterator[int]:
    """This test process's own descriptors for the half-open connections (its soft limit
    raised towards the hard one for the test, and put back after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 4000) if hard != resource.RLIM_INFINITY else 4000
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield max(soft, wanted)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def half_open(port: int, count: int, serve: Serve) -> tuple[list[socket.socket], int, int]:
    """``count`` connections to ``port``, each sending half a request header, opened in
    batches smaller than serve's listen queue (a SYN the full queue drops would wait out a
    1 s retransmit), each waited on for 5 s at most. Returns the sockets, how many sent
    their half header, and the most descriptors serve held meanwhile."""
    opened: list[socket.socket] = []
    sent = peak = 0
    for start in range(0, count, 32):
        batch = []
        with selectors.DefaultSelector() as selector:
            for _ in range(min(32, count - start)):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
                selector.register(sock, selectors.EVENT_WRITE)
                batch.append(sock)
            pending, deadline = len(batch), time.monotonic() + 5
            while pending and time.monotonic() < deadline:
                for key, _ in selector.select(timeout=0.5):
                    sock = key.fileobj  # type: ignore[assignment]
                    selector.unregister(sock)
                    pending -= 1
                    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        with contextlib.suppress(OSError):  # already dropped by serve
                            sent += sock.send(HALF) == len(HALF)
        opened += batch
        peak = max(peak, serve.fds())
    return opened, sent, peak


def test_half_open_connections_neither_exhaust_serve_nor_stop_an_answer(
    tmp_path: Path, room: int
) -> None:
    # serve at the soft limit a systemd user service gets (1024), a few thousand half-open
    # connections: the test's own descriptors permitting, always more than serve could hold.
    nofile = 1024 if room >= 3500 else 256
    count = min(3000, room - 300)
    bound = most_open(limits(nofile))
    assert count > 2 * nofile, f"this process may open only {room} files"
    serve = Serve(tmp_path, nofile)
    sockets: list[socket.socket] = []
    try:
        before = serve.fds()
        sockets, sent, peak = half_open(serve.port, count, serve)
        assert sent > nofile  # more than serve could ever hold at once
        # Every one of them accepted (the kernel queues them in order of arrival).
        peaks = [peak]

        def accepted() -> bool:
            peaks.append(serve.fds())
            return max(peaks) > bound or serve.unaccepted() == 0

        wait_until(accepted, 20, "serve to accept them all")
        assert max(peaks) <= bound, f"serve held {max(peaks)} descriptors (bound {bound})"
        # A real, authenticated request, while serve holds all the half-open ones it may.
        assert serve.fds() >= limits(nofile).max_connections
        start = time.monotonic()
        with httpx.Client(base_url=serve.base, timeout=5) as phone:
            page = phone.get(f"/?token={serve.token}", follow_redirects=True)
            assert page.status_code == 200 and "inbox" in page.text.lower()
        assert time.monotonic() - start < 1.0
        assert serve.fds() <= bound
        # Their headers overdue, the half-open connections are dropped.
        wait_until(lambda: serve.fds() <= before, HEADER_TIMEOUT + 15, "half-open ones dropped")
        assert "out of system resource" not in serve.out.read_text()
    finally:
        for sock in sockets:
            sock.close()
        serve.stop()
