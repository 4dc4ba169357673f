"""queen-mq 2.6.0's builder options and callbacks (issue 16; test_queen_api_coverage.py
lists them), each through the real client against a real `baton serve`: push, consume
and operation callbacks fired by what the server answered; a transaction gated by
`once`; DLQ paging; pops committed at delivery; `subscription_from`; the autopilot pop
and `pop_result`; a supervised, lease-renewing, concurrent consumer; offset reads.
"""

from __future__ import annotations

import asyncio
import uuid

from conftest import open_queen
from queen_helpers import assert_nothing_delivered, collect, configure, push, qname, run


def test_push_callbacks_follow_the_answers(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("pcb")
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"maxSize": 2})
            ok, dup, err = [], [], []

            async def on_ok(items):
                ok.extend(items)

            async def on_dup(items, e):
                dup.extend(items)

            async def on_err(items, e):
                err.extend(items)

            await queen.queue(q).push([{"transactionId": f"{q}-a", "data": 1}]) \
                .on_success(on_ok).on_duplicate(on_dup).on_error(on_err)
            assert len(ok) == 1 and not dup and not err
            await queen.queue(q).push([{"transactionId": f"{q}-a", "data": 1}]) \
                .on_success(on_ok).on_duplicate(on_dup).on_error(on_err)
            assert len(dup) == 1 and dup[0]["result"]["status"] == "duplicate", dup
            # The queue holds at most 2: the third message is refused by the server.
            await queen.queue(q).push([{"transactionId": f"{q}-b", "data": 2}, {"transactionId": f"{q}-c", "data": 3}]) \
                .on_success(on_ok).on_duplicate(on_dup).on_error(on_err)
            # A push group is refused whole (nothing of it stored): both items fail.
            assert [i["result"]["status"] for i in err] == ["failed", "failed"] and "maxSize" in err[0]["error"], err
            assert len(ok) == 1

    run(scenario())


def test_consume_and_operation_callbacks(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("ccb")
        async with open_queen(baton_url) as queen:
            created, refused = [], []

            async def on_created(r):
                created.append(r)

            async def on_refused(e):
                refused.append(e)

            await queen.queue(q).config({"retryLimit": 5}).create().on_success(on_created)
            assert created and created[0].get("configured") is True, created
            await queen.queue(qname("bad")).config({"leaseTime": -1}).create().on_error(on_refused)
            assert refused, "a refused configure did not reach on_error"

            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(4)])
            done, failed = [], []

            async def handler(m):
                if m["data"]["i"] == 2:
                    raise ValueError("poison")
                return m["data"]["i"]

            async def on_success(m, result):
                done.append(result)
                await queen.ack(m, True, {"group": "cg"})

            async def on_error(m, e):
                failed.append((m["data"]["i"], str(e)))
                await queen.ack(m, "dlq", {"group": "cg", "error": str(e)})

            await asyncio.wait_for(
                queen.queue(q).group("cg").batch(1).limit(4).wait(True).timeout_millis(2000)
                .consume(handler).on_success(on_success).on_error(on_error), 40)
            assert sorted(done) == [0, 1, 3] and failed == [(2, "poison")], (done, failed)
            dlq = await queen.queue(q).dlq("cg").get()
            assert [d["data"] for d in dlq["messages"]] == [{"i": 2}], dlq
            await assert_nothing_delivered(queen, q, group="cg", why="every message settled by a callback")

    run(scenario())


def test_transaction_once_and_dlq_paging(baton_url: str) -> None:
    async def scenario() -> None:
        q, out = qname("once"), qname("onceout")
        ns = f"gate-{uuid.uuid4().hex[:6]}"
        async with open_queen(baton_url) as queen:
            await configure(queen, out)
            first = await queen.transaction().once(ns, "job-1", forever=True).queue(out).push([{"data": {"n": 1}}]).commit()
            second = await queen.transaction().once(ns, "job-1", forever=True).queue(out).push([{"data": {"n": 2}}]).commit()
            assert first.get("success") is True, first
            assert second.get("success") is False and second.get("reason") == "kv_precondition", second
            got = await collect(queen, out, expected=2, deadline_s=3)
            assert [m["data"] for m in got] == [{"n": 1}], "the second bundle applied nothing"

            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(5)])
            msgs = await collect(queen, q, expected=5, group="g", ack=False)
            for m in msgs:
                await queen.ack(m, "dlq", {"group": "g"})
            page1 = await queen.queue(q).dlq("g").limit(2).offset(0).get()
            page2 = await queen.queue(q).dlq("g").limit(2).offset(2).get()
            page3 = await queen.queue(q).dlq("g").limit(2).offset(4).get()
            ids = [d["transactionId"] for p in (page1, page2, page3) for d in p["messages"]]
            assert sorted(ids) == sorted(f"{q}-{i}" for i in range(5)) and len(ids) == 5, ids
            assert page1["total"] == 5 and len(page3["messages"]) == 1, page3

    run(scenario())


def test_delivery_commit_subscription_from_and_pop_result(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("opts")
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": 1})
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            got = await queen.queue(q).group("cod").commit_on_delivery().batch(3).wait(False).pop()
            assert [m["data"]["i"] for m in got] == [0, 1, 2], got
            await asyncio.sleep(1.5)  # past the lease: nothing comes back, it was settled at delivery
            await assert_nothing_delivered(queen, q, group="cod", why="committed at delivery")

            # subscription_from('now'): a new group skips what was there before it.
            late = await queen.queue(q).group("late").subscription_from("now").batch(10).wait(False).pop()
            assert late == [], late
            await push(queen, q, [{"transactionId": f"{q}-new", "data": {"i": 9}}])
            late = await queen.queue(q).group("late").subscription_from("now").batch(10).wait(False).pop()
            assert [m["data"]["i"] for m in late] == [9], late

            res = await queen.queue(q).group("ap").autopilot().batch(10).wait(False).pop_result()
            assert [m["data"]["i"] for m in res.messages] == [0, 1, 2, 9], res
            await queen.ack(res.messages, True, {"group": "ap"})

    run(scenario())


def test_supervised_concurrent_consumer_with_lease_renewal(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("sup")
        app = f"app-{uuid.uuid4().hex[:6]}"
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": 1})
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(6)])
            seen: list = []

            async def slow(m):
                await asyncio.sleep(1.6)  # past the 1 s lease: only renewal keeps it ours
                # (`limit` counts per worker: three workers of two messages each)
                seen.append(m["data"]["i"])

            await asyncio.wait_for(
                queen.queue(q).group("w").batch(1).limit(2).concurrency(3).renew_lease(True, 300)
                .supervision({"group": app}).wait(True).timeout_millis(2000).consume(slow), 60)
            assert sorted(seen) == list(range(6)), seen
            await assert_nothing_delivered(queen, q, group="w", why="renewed leases: no redelivery")
            status = await queen.kv.get_prefix("queen-supervisor", f"{app}/")
            assert any(r["key"].endswith("/head") for r in status["rows"]), status

    run(scenario())


def test_fetch_reads_by_offset(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("fetch")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await queen.queue(q).partition("p1").push([{"data": {"i": i}} for i in range(4)])
            read = await queen.queue(q).fetch(["p1"])
            part = read["p1"]
            assert [r["payload"] for r in part["records"]] == [{"i": i} for i in range(4)], part
            assert part["highWatermark"] == 4 and part["nextOffset"] == 4, part
            again = await queen.queue(q).fetch("p1", offsets={"p1": 2})
            assert [r["payload"]["i"] for r in again["p1"]["records"]] == [2, 3], again

    run(scenario())
