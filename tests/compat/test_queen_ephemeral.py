"""Queen's ephemeral queues (`client.ephemeral`, issue 16 item 2) through the real
queen-mq client against a real `baton serve`: in memory only, never written to the log
(D56). What is shown: the eight verbs; groups fan out and share; a failed message comes
back with one more attempt and past retryLimit is dropped; bounds refuse or drop the
oldest; a long poll wakes on a push; and across a restart the declared configuration
comes back, the contents do not, and an ack from before answers `stale`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path

import pytest
from queen.errors import EphemeralQueueNotFoundError

from conftest import DEFAULT_BATON_BIN, _free_port, _stop, _wait_healthy, open_queen

TIMEOUT_S = 60


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


def test_ephemeral_verbs_groups_and_redelivery(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            eph = queen.ephemeral
            r = await eph.configure("inbox", lease_seconds=30, retry_limit=1)
            assert r["durable"] is False and r["options"]["retryLimit"] == 1, r
            r = await eph.push("inbox", [{"n": i} for i in range(4)], partition="room-1")
            assert r["pushed"] == 4 and r["durable"] is False, r

            # Two groups each see everything; two consumers of one group share it.
            a1 = (await eph.pop("inbox", group="a", batch=2))["messages"]
            a2 = (await eph.pop("inbox", group="a", batch=10))["messages"]
            b = (await eph.pop("inbox", group="b", batch=10))["messages"]
            assert [m["payload"]["n"] for m in a1] == [0, 1]
            assert [m["payload"]["n"] for m in a2] == [2, 3]
            assert [m["payload"]["n"] for m in b] == [0, 1, 2, 3]
            assert all(m["partition"] == "room-1" and m["attempts"] == 0 for m in b), b

            r = await eph.ack("inbox", a1 + a2, group="a")
            assert [x["outcome"] for x in r["results"]] == ["acked"] * 4, r
            r = await eph.ack("inbox", a1[0], group="a")
            assert r["results"][0]["outcome"] == "unknown", "settled twice"

            # b fails its first: it comes back first, one attempt more; failed again past
            # retryLimit 1 it is dropped.
            r = await eph.ack("inbox", [b[0]], group="b", status=False)
            assert r["results"][0]["outcome"] == "redelivered", r
            again = (await eph.pop("inbox", group="b", batch=10))["messages"]
            assert [(m["payload"]["n"], m["attempts"]) for m in again] == [(0, 1)], again
            r = await eph.ack("inbox", again, group="b", status="retry")
            assert r["results"][0]["outcome"] == "dropped", r
            await eph.ack("inbox", b[1:], group="b")
            depth = await eph.depth("inbox")
            assert depth["length"] == 0 and depth["dropped"] == 1, depth

            # Queue mode (no group), commit on delivery: nothing to ack. (Groups a and b have
            # not read these yet: the ring keeps them for them.)
            await eph.push("inbox", ["x", "y"])
            got = (await eph.pop("inbox", batch=10, commit_on_delivery=True))["messages"]
            assert [m["payload"] for m in got] == ["x", "y"]
            assert (await eph.pop("inbox", batch=10))["messages"] == []

            # A long poll wakes on a push, well before its timeout.
            async def later() -> None:
                await asyncio.sleep(0.3)
                await eph.push("waits", ["late"])

            t = time.monotonic()
            waiter = asyncio.ensure_future(eph.pop("waits", group="w", wait=True, timeout_millis=10_000))
            await later()
            woke = await waiter
            assert [m["payload"] for m in woke["messages"]] == ["late"], woke
            assert time.monotonic() - t < 5

            names = [q["queue"] for q in (await eph.queues())["queues"]]
            assert "inbox" in names, names
            assert (await eph.reset("inbox"))["dropped"] >= 0
            assert (await eph.delete("inbox"))["deleted"] is True
            with pytest.raises(EphemeralQueueNotFoundError):
                await eph.depth("inbox")

    run(scenario())


def test_ephemeral_bounds(baton_url: str) -> None:
    async def scenario() -> None:
        # A full queue answers 429, which the client retries with backoff (backpressure):
        # one attempt here, so the refusal surfaces.
        async with open_queen(baton_url, retry_429={"max_attempts": 1, "base_ms": 10}) as queen:
            eph = queen.ephemeral
            await eph.configure("capped", max_length=3)
            await eph.push("capped", [1, 2, 3])
            with pytest.raises(Exception) as refused:
                await eph.push("capped", [4])
            assert "429" in str(refused.value) or "ephemeral_queue_full" in str(refused.value), refused.value
            assert (await eph.depth("capped"))["length"] == 3, "a refused push adds nothing"

            await eph.configure("feed", max_length=3, policy="drop-oldest")
            await eph.push("feed", [1, 2, 3])
            await eph.push("feed", [4, 5])
            got = (await eph.pop("feed", batch=10, commit_on_delivery=True))["messages"]
            assert [m["payload"] for m in got] == [3, 4, 5], got

            with pytest.raises(Exception) as bad:
                await eph.configure("bad", policy="keep-everything")
            assert "invalid_option" in str(bad.value) or "400" in str(bad.value), bad.value

    run(scenario())


def test_ephemeral_config_survives_a_restart_and_contents_do_not(tmp_path: Path) -> None:
    binary = Path(os.environ.get("BATON_BIN", str(DEFAULT_BATON_BIN)))
    data = tmp_path / "data"
    data.mkdir()

    def start() -> tuple[subprocess.Popen, str]:
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(tmp_path / "server.log", "ab")
        proc = subprocess.Popen([str(binary), "serve", "--http-addr", f"127.0.0.1:{port}", "--data-dir", str(data)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        _wait_healthy(url, proc, 30, tmp_path / "server.log")
        return proc, url

    proc, url = start()
    try:
        async def before() -> dict:
            async with open_queen(url) as queen:
                await queen.ephemeral.configure("kept", max_length=7, retry_limit=2)
                await queen.ephemeral.push("kept", ["a", "b"])
                return (await queen.ephemeral.pop("kept", group="g"))["messages"][0]

        held = run(before())
    finally:
        _stop(proc)
    proc, url = start()
    try:
        async def after() -> None:
            async with open_queen(url) as queen:
                depth = await queen.ephemeral.depth("kept")
                assert depth["length"] == 0, "contents survive nothing"
                assert depth["options"]["maxLength"] == 7 and depth["options"]["retryLimit"] == 2, depth
                r = await queen.ephemeral.ack("kept", held, group="g")
                assert r["results"][0]["outcome"] == "stale", r
                assert (await queen.ephemeral.pop("kept", group="g"))["messages"] == []

        run(after())
    finally:
        _stop(proc)
