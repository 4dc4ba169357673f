"""The streaming SDK's remaining operators (issue 16; test_queen_api_coverage.py lists
them) through the real queen-mq client against a real `baton serve`: sliding, session
and cron windows on event time, `aggregate`, `flat_map`, `foreach`, and `gate` with both
of the SDK's rate limiters. Each stream reads a source of four known events (and, for the
windows, one event far ahead that moves the watermark past them) and the test checks the
exact records that reach the sink. The camelCase names are the same functions as the
snake_case ones, which is asserted.
"""

from __future__ import annotations

import asyncio
import uuid

from queen import Stream, sliding_window_gate, token_bucket_gate

from conftest import open_queen

TIMEOUT_S = 120
EVENTS = [{"k": "a", "ts": 100, "v": 1}, {"k": "a", "ts": 1500, "v": 2}, {"k": "b", "ts": 500, "v": 10},
          {"k": "a", "ts": 3000, "v": 4}]
FAR = {"k": "a", "ts": 60_000, "v": 100}


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


def key(m):
    return m["data"]["k"]


def event_time(m):
    return m["data"]["ts"]


async def through(queen, url: str, build, *, closer=None, settle_s: float = 4.0):
    """Runs `build(Stream.from_(src), sink)` over EVENTS (then `closer`); the sink's records
    and the runner's metrics."""
    tag = uuid.uuid4().hex[:8]
    src, sink = f"src-{tag}", f"sink-{tag}"
    await queen.queue(src).push([{"data": e} for e in EVENTS])
    stream = build(Stream.from_(queen.queue(src)), queen.queue(sink))
    runner = await stream.run(query_id=f"q-{tag}", url=url, batch_size=50, max_wait_millis=200)
    got: list = []
    try:
        await asyncio.sleep(1.0)
        if closer is not None:
            await queen.queue(src).push([{"data": closer}])
        for _ in range(int(settle_s * 10)):
            msgs = await queen.queue(sink).group("check").batch(100).wait(False).pop()
            if msgs:
                got += msgs
                await queen.ack(msgs, True, {"group": "check"})
            await asyncio.sleep(0.1)
        metrics = runner.metrics()
    finally:
        await runner.stop()
    assert metrics["errorsTotal"] == 0, metrics
    return [m["data"] for m in got], metrics


def test_camel_case_names_are_the_snake_case_operators() -> None:
    assert Stream.flatMap is Stream.flat_map and Stream.keyBy is Stream.key_by
    assert Stream.windowTumbling is Stream.window_tumbling and Stream.windowSliding is Stream.window_sliding
    assert Stream.windowSession is Stream.window_session and Stream.windowCron is Stream.window_cron


def test_sliding_session_and_cron_windows(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            sliding, _ = await through(queen, baton_url, lambda s, sink: s.keyBy(key)
                                       .window_sliding(size=2, slide=1, event_time=event_time)
                                       .reduce(lambda acc, v: acc + v["v"], 0).to(sink), closer=FAR)
            # a: [-1,1) 1, [0,2) 1+2, [1,3) 2, [2,4) 4, [3,5) 4; b: [-1,1) 10, [0,2) 10 (seconds).
            assert sorted(r["value"] for r in sliding) == [1, 2, 3, 4, 4, 10, 10], sliding
            sessions, _ = await through(queen, baton_url, lambda s, sink: s.key_by(key)
                                        .window_session(gap=1, event_time=event_time)
                                        .reduce(lambda acc, v: acc + v["v"], 0).to(sink), closer=FAR)
            # Gaps of 1.4 s and 1.5 s between a's events: three sessions; b one.
            assert sorted(r["value"] for r in sessions) == [1, 2, 4, 10], sessions
            cron, _ = await through(queen, baton_url, lambda s, sink: s.key_by(key)
                                    .window_cron(every="second", event_time=event_time)
                                    .aggregate({"count": lambda v: 1, "sum": lambda v: v["v"]}).to(sink), closer=FAR)
            assert sorted((r["count"], r["sum"]) for r in cron) == [(1, 1), (1, 2), (1, 4), (1, 10)], cron

    run(scenario())


def test_flat_map_and_foreach(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            doubled, _ = await through(queen, baton_url, lambda s, sink: s.flat_map(lambda m: [m, m]).to(sink))
            assert sorted(r["data"]["v"] for r in doubled) == [1, 1, 2, 2, 4, 4, 10, 10], doubled
            seen: list = []
            _, metrics = await through(queen, baton_url, lambda s, sink: s.foreach(lambda v, ctx=None: seen.append(v)))
            # foreach is handed each message's payload.
            assert sorted(v["v"] for v in seen) == [1, 2, 4, 10], seen
            assert metrics["messagesTotal"] == 4, metrics

    run(scenario())


def test_gates_with_the_sdks_rate_limiters(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            # Two tokens per key that never refill: a's third event is denied, b's passes.
            bucket, metrics = await through(queen, baton_url, lambda s, sink: s.key_by(key)
                                            .gate(token_bucket_gate(capacity=2, refill_per_sec=0.0001)).to(sink))
            assert sorted((r["k"], r["v"]) for r in bucket) == [("a", 1), ("a", 2), ("b", 10)], bucket
            assert metrics["gateDenialsTotal"] >= 1 and metrics["gateAllowsTotal"] == 3, metrics
            # One event per key an hour: a's second is denied, and a denial halts the batch
            # (the rest stays leased, in order), so only a's first reaches the sink.
            window, metrics = await through(queen, baton_url, lambda s, sink: s.key_by(key)
                                            .gate(sliding_window_gate(limit=1, window_sec=3600)).to(sink))
            assert [(r["k"], r["v"]) for r in window] == [("a", 1)], window
            assert metrics["gateDenialsTotal"] >= 1, metrics

    run(scenario())
