"""Queen's streaming SDK (`queen.Stream`, issue 16 item 3) through the real queen-mq client
against a real `baton serve` (D59): the SDK computes, Baton keeps the state and commits
each cycle (state, sink pushes, source acks) as one transaction. What is shown: map and
filter into a sink exactly once across a SIGKILL of the broker mid-stream; a keyed
tumbling window on event time whose sums come out once per window; a changed query
definition refused (409) unless reset, and a reset query starting from empty state.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest
from queen import Stream
from queen.streams.runtime.register import StreamsConfigHashMismatch

from conftest import DEFAULT_BATON_BIN, _free_port, _stop, _wait_healthy, open_queen

TIMEOUT_S = 120


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


class Broker:
    """A `baton serve` on a fixed port and data dir that can be SIGKILLed and restarted."""

    def __init__(self, tmp: Path) -> None:
        self.binary = Path(os.environ.get("BATON_BIN", str(DEFAULT_BATON_BIN)))
        self.data = tmp / "data"
        self.data.mkdir()
        self.log_path = tmp / "server.log"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(self.binary), "serve", "--http-addr", f"127.0.0.1:{self.port}", "--data-dir", str(self.data)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        _wait_healthy(self.url, self.proc, 30, self.log_path)

    def kill9(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            _stop(self.proc)


async def drain(queen, queue: str, group: str) -> list:
    """Every message of `queue` for a fresh group, acked as read."""
    out: list = []
    for _ in range(200):
        msgs = await queen.queue(queue).group(group).batch(100).wait(False).pop()
        if not msgs:
            break
        out.extend(msgs)
        await queen.ack(msgs, True, {"group": group})
    return out


def test_map_filter_sink_is_exactly_once_across_a_broker_kill(tmp_path: Path) -> None:
    broker = Broker(tmp_path)
    broker.start()
    try:
        async def scenario() -> None:
            async with open_queen(broker.url) as queen:
                # A batch whose cycle died with the broker comes back when its lease ends.
                await queen.queue("src").config({"leaseTime": 2}).create()
                for p in range(4):
                    await queen.queue("src").partition(f"p{p}").push(
                        [{"data": {"n": n}} for n in range(p * 500, p * 500 + 500)])
                runner = await Stream.from_(queen.queue("src")) \
                    .map(lambda m: {"n": m["data"]["n"], "sq": m["data"]["n"] ** 2}) \
                    .filter(lambda m: m["data"]["n"] % 4 != 0) \
                    .to(queen.queue("dst")) \
                    .run(query_id="squares", url=broker.url, batch_size=10, max_wait_millis=200)
                try:
                    # Kill the broker once part of the stream went through, then bring it back.
                    for _ in range(300):
                        if runner.metrics()["cyclesTotal"] >= 8:
                            break
                        await asyncio.sleep(0.05)
                    assert runner.metrics()["cyclesTotal"] >= 8, runner.metrics()
                    # The kill lands mid-stream: part of the source is processed, not all.
                    at_kill = runner.metrics()["messagesTotal"]
                    broker.kill9()
                    assert 0 < at_kill < 2000, at_kill
                    await asyncio.sleep(1.0)
                    broker.start()
                    expected = {n for n in range(2000) if n % 4 != 0}
                    for _ in range(600):
                        depth = await queen.admin.get_queue_depth("src", group="streams.squares")
                        if depth["pending"] == 0:
                            break
                        await asyncio.sleep(0.1)
                    assert depth["pending"] == 0, depth
                finally:
                    await runner.stop()
                got = await drain(queen, "dst", "check")
                ns = [m["data"]["n"] for m in got]
                assert sorted(ns) == sorted(expected), (len(ns), len(expected))
                assert len(ns) == len(set(ns)), "a sunk message appeared twice"
                assert all(m["data"]["sq"] == m["data"]["n"] ** 2 for m in got)

        run(scenario())
    finally:
        broker.stop()


def test_keyed_tumbling_window_sums_once_per_window(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            events = [("a", 100, 1), ("a", 900, 2), ("b", 500, 10), ("a", 1200, 5), ("b", 1999, 7)]
            await queen.queue("clicks").push([{"data": {"k": k, "ts": ts, "v": v}} for k, ts, v in events])
            runner = await Stream.from_(queen.queue("clicks")) \
                .key_by(lambda m: m["data"]["k"]) \
                .window_tumbling(seconds=1, event_time=lambda m: m["data"]["ts"]) \
                .reduce(lambda acc, v: acc + v["v"], 0) \
                .to(queen.queue("sums")) \
                .run(query_id="sums", url=baton_url, batch_size=50, max_wait_millis=200)
            try:
                await asyncio.sleep(1.0)
                # An event far ahead moves the watermark past both windows: they close.
                await queen.queue("clicks").push([{"data": {"k": "a", "ts": 5000, "v": 100}}])
                got: list = []
                for _ in range(100):
                    got += await drain(queen, "sums", "check")
                    if len(got) >= 4:
                        break
                    await asyncio.sleep(0.1)
            finally:
                await runner.stop()
            values = sorted(m["data"]["value"] for m in got)
            assert values == [3, 5, 7, 10], got
            assert runner.metrics()["errorsTotal"] == 0, runner.metrics()

    run(scenario())


def test_changed_query_is_refused_unless_reset(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            await queen.queue("in").push([{"data": {"n": 1}}])
            first = await Stream.from_(queen.queue("in")).map(lambda v: v).to(queen.queue("out")) \
                .run(query_id="q", url=baton_url, max_wait_millis=200)
            await first.stop()
            with pytest.raises(StreamsConfigHashMismatch):
                await Stream.from_(queen.queue("in")).filter(lambda v: True).to(queen.queue("out")) \
                    .run(query_id="q", url=baton_url, max_wait_millis=200)
            again = await Stream.from_(queen.queue("in")).filter(lambda v: True).to(queen.queue("out")) \
                .run(query_id="q", url=baton_url, reset=True, max_wait_millis=200)
            try:
                assert again.metrics()["serverQueryId"] != first.metrics()["serverQueryId"]
            finally:
                await again.stop()

    run(scenario())
