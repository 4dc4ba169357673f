"""
The REAL Queen Python client (queen-mq 2.6.0) with all three URLs of a Baton
cluster, across a SIGKILL of the leader (issue 14, D42).

Three `baton serve --node-id N --peers ...` members on loopback, each with its
own directory and ports. The client is built as a Queen user with a cluster
builds it: every URL, failover on, its own retries. The application retries a
push that raised, with the same transactionId (Baton dedupes it), as a Queen
user's code does. Any member takes any request: one that does not lead
forwards it to the leader.

What must hold: every push the client saw succeed is delivered exactly once
afterwards, nothing is delivered that was not pushed, and pushes succeed again
within a bounded time after the leader dies.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Dict, List

import pytest
from queen import Queen

from conftest import DEFAULT_BATON_BIN, _free_port, _log_tail

N_PUSHES = 150
KILL_AFTER = 50


def _get(url: str, timeout: float = 1.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except Exception:  # noqa: BLE001
        return None


class Members:
    def __init__(self, workdir: Path) -> None:
        self.binary = Path(os.environ.get("BATON_BIN", str(DEFAULT_BATON_BIN)))
        self.workdir = workdir
        self.http = [_free_port() for _ in range(3)]
        self.kafka = [_free_port() for _ in range(3)]
        raft = [_free_port() for _ in range(3)]
        self.peers = ",".join(f"{i + 1}=127.0.0.1:{raft[i]}" for i in range(3))
        self.procs: List[subprocess.Popen] = [None, None, None]  # type: ignore[list-item]

    def url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.http[i]}"

    def log(self, i: int) -> Path:
        return self.workdir / f"n{i + 1}.log"

    def start(self, i: int) -> None:
        cmd = [
            str(self.binary), "serve",
            "--node-id", str(i + 1), "--peers", self.peers,
            "--http-addr", f"127.0.0.1:{self.http[i]}",
            "--kafka-addr", f"127.0.0.1:{self.kafka[i]}",
            "--data-dir", str(self.workdir / f"n{i + 1}"),
        ]
        with open(self.log(i), "ab") as log:
            self.procs[i] = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def leader(self, within_s: float = 20.0) -> int:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            for i in range(3):
                if self.procs[i] is not None and self.procs[i].poll() is None:
                    v = _get(f"{self.url(i)}/cluster")
                    if v and v.get("leading") is True:
                        return i
            time.sleep(0.05)
        raise TimeoutError("no member leads within %.0f s" % within_s)

    def all_know_leader(self, within_s: float = 20.0) -> None:
        """Every member knows the leader and its HTTP address (so it can forward)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            views = [_get(f"{self.url(i)}/cluster") for i in range(3)]
            leaders = {v.get("leader") for v in views if v}
            if len(leaders) == 1 and all(views):
                lid = leaders.pop()
                if all(any(m["id"] == lid and m.get("http") for m in v["members"]) for v in views):
                    return
            time.sleep(0.05)
        raise TimeoutError("the members did not agree on a leader's address")

    def kill(self, i: int) -> None:
        os.killpg(self.procs[i].pid, signal.SIGKILL)
        self.procs[i].wait(timeout=10)
        self.procs[i] = None

    def stop_all(self) -> None:
        for p in self.procs:
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=10)


@pytest.fixture
def members(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if os.environ.get("BATON_URL"):
        pytest.skip("the cluster test starts its own members")
    m = Members(tmp_path_factory.mktemp("cluster"))
    for i in range(3):
        m.start(i)
    try:
        m.leader()
        m.all_know_leader()
        yield m
    finally:
        m.stop_all()
        for phase in ("setup", "call"):
            rep = getattr(request.node, f"rep_{phase}", None)
            if rep is not None and rep.failed:
                for i in range(3):
                    print(f"\n--- member {i + 1} log ---\n{_log_tail(m.log(i), 40)}")


def test_queen_client_with_three_urls_survives_a_leader_kill(members: Members) -> None:
    async def scenario() -> Dict[str, float]:
        saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        queen = Queen(
            urls=[members.url(i) for i in range(3)],
            load_balancing_strategy="round-robin",
            enable_failover=True,
            retry_attempts=3,
            retry_delay_millis=100,
        )
        q = "cluster-q"
        answered: List[str] = []
        killed_at = None
        first_after_kill = None
        try:
            res = await queen.queue(q).create()
            assert res.get("configured") is True, res
            for n in range(N_PUSHES):
                if n == KILL_AFTER:
                    members.kill(members.leader())
                    killed_at = time.monotonic()
                tx = f"tx-{n}"
                for _attempt in range(100):  # bounded application retry, as a user writes it
                    try:
                        out = await queen.queue(q).push([{"transactionId": tx, "data": {"n": n}}])
                        if isinstance(out, list) and out and out[0].get("status") in ("queued", "duplicate"):
                            answered.append(tx)
                            if killed_at is not None and first_after_kill is None:
                                first_after_kill = time.monotonic() - killed_at
                            break
                    except Exception:  # noqa: BLE001
                        pass
                    await asyncio.sleep(0.1)
                else:
                    raise AssertionError(f"push {n} never succeeded")
            got: List[str] = []
            for _ in range(400):  # bounded drain
                msgs = await queen.queue(q).batch(100).wait(False).pop()
                if not msgs:
                    break
                got.extend(m["transactionId"] for m in msgs)
                acked = await queen.ack(msgs, True)
                assert acked.get("success") is True, acked
            assert sorted(got) == sorted(set(got)), "a message was delivered twice"
            assert set(got) == set(answered), (
                f"lost {sorted(set(answered) - set(got))[:5]}, phantom {sorted(set(got) - set(answered))[:5]}"
            )
            assert len(got) == N_PUSHES
            return {"first_after_kill_s": first_after_kill or -1.0}
        finally:
            try:
                await asyncio.wait_for(queen.close(), 35)
            finally:
                for sig, handler in saved.items():
                    signal.signal(sig, handler)

    out = asyncio.run(asyncio.wait_for(scenario(), 120))
    print(f"leader SIGKILL -> next push the client saw succeed: {out['first_after_kill_s']:.2f} s")
    assert 0 < out["first_after_kill_s"] < 15
