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
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import open_queen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))
from baton_cluster import Members  # noqa: E402

N_PUSHES = 150
KILL_AFTER = 50


@pytest.fixture
def members(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if os.environ.get("BATON_URL"):
        pytest.skip("the cluster test starts its own members")
    m = Members(tmp_path_factory.mktemp("cluster"))
    try:
        m.start_all()
        yield m
    finally:
        m.stop_all()
        for phase in ("setup", "call"):
            rep = getattr(request.node, f"rep_{phase}", None)
            if rep is not None and rep.failed:
                for i in range(3):
                    print(f"\n--- member {i + 1} log ---\n{m.log_tail(i)}")


def test_queen_client_with_three_urls_survives_a_leader_kill(members: Members) -> None:
    async def scenario() -> Dict[str, float]:
        client = dict(
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
        async with open_queen(**client) as queen:
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

    out = asyncio.run(asyncio.wait_for(scenario(), 120))
    print(f"leader SIGKILL -> next push the client saw succeed: {out['first_after_kill_s']:.2f} s")
    assert 0 < out["first_after_kill_s"] < 15
