"""
Three `baton serve --node-id N --peers ...` members on loopback for the Python client
suites (tests/compat, tests/kafka-compat): each with its own directory, HTTP, Kafka and
Raft ports; find the leader, SIGKILL a member, start it again on its directory, stop all.
Only processes this module started are signalled (their process groups).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("BATON_BIN", str(ROOT / "target" / "release" / "baton")))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float = 1.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except Exception:  # noqa: BLE001
        return None


class Members:
    def __init__(self, workdir: Path, extra: Optional[List[str]] = None) -> None:
        self.workdir = workdir
        self.extra = extra or []
        self.http = [free_port() for _ in range(3)]
        self.kafka = [free_port() for _ in range(3)]
        raft = [free_port() for _ in range(3)]
        self.peers = ",".join(f"{i + 1}=127.0.0.1:{raft[i]}" for i in range(3))
        self.procs: List[Optional[subprocess.Popen]] = [None, None, None]

    def url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.http[i]}"

    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.kafka)

    def log(self, i: int) -> Path:
        return self.workdir / f"n{i + 1}.log"

    def log_tail(self, i: int, lines: int = 40) -> str:
        try:
            return "\n".join(self.log(i).read_text(errors="replace").splitlines()[-lines:])
        except OSError as e:
            return f"<{e}>"

    def start(self, i: int) -> None:
        if not BIN.exists():
            raise RuntimeError(f"{BIN} is missing: run `cargo build --release` first")
        cmd = [
            str(BIN), "serve",
            "--node-id", str(i + 1), "--peers", self.peers,
            "--http-addr", f"127.0.0.1:{self.http[i]}",
            "--kafka-addr", f"127.0.0.1:{self.kafka[i]}",
            "--data-dir", str(self.workdir / f"n{i + 1}"),
            *self.extra,
        ]
        with open(self.log(i), "ab") as log:
            self.procs[i] = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def start_all(self) -> None:
        for i in range(3):
            self.start(i)
        self.leader()
        self.all_know_leader()

    def running(self, i: int) -> bool:
        p = self.procs[i]
        return p is not None and p.poll() is None

    def leader(self, within_s: float = 20.0) -> int:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            for i in range(3):
                if self.running(i):
                    v = get_json(f"{self.url(i)}/cluster")
                    if v and v.get("leading") is True:
                        return i
            time.sleep(0.05)
        raise TimeoutError("no member leads within %.0f s" % within_s)

    def all_know_leader(self, within_s: float = 20.0) -> None:
        """Every member knows the leader and its addresses (so it can forward and name it)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            views = [get_json(f"{self.url(i)}/cluster") for i in range(3)]
            leaders = {v.get("leader") for v in views if v}
            if len(leaders) == 1 and all(views):
                lid = leaders.pop()
                if all(any(m["id"] == lid and m.get("http") for m in v["members"]) for v in views):
                    return
            time.sleep(0.05)
        raise TimeoutError("the members did not agree on a leader's address")

    def kill(self, i: int) -> None:
        p = self.procs[i]
        assert p is not None
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        self.procs[i] = None

    def stop_all(self) -> None:
        for p in self.procs:
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=10)
