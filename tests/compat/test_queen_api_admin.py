"""Queen's admin, consumer-group, KV, lock, timer and client-buffer calls (issue 16) through
the real queen-mq 2.6.0 client against a real `baton serve`, each checked for what it
answers AND for what it did on the server: the admin views count what was pushed and
settled, `get_lagging_consumers(n)` honours its threshold in seconds, a group moved by
`update_consumer_group_timestamp` reads again from that time and a deleted group starts
over, `clear_queue` and `move_message_to_dlq` raise before any request, KV's conditional
writes admit exactly one of many concurrent callers, a lock handle's `on_lost` runs when
its permit is taken away, `locks.release_all()` and `close()` give permits back, buffered
pushes arrive once when flushed, a cancelled timer never fires, a rescheduled one fires
at its new time, and a timer's `txn` is the transaction id of the message it becomes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List

import httpx
import pytest

from conftest import open_queen
from queen_helpers import assert_nothing_delivered, collect, configure, push, qname, run

BUFFER = {"message_count": 1000, "time_millis": 60_000}  # only an explicit flush sends


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def refused(info: pytest.ExceptionInfo, status: int, code: str) -> None:
    err = info.value
    assert isinstance(err, httpx.HTTPStatusError), repr(err)
    assert err.response.status_code == status and getattr(err, "code", None) == code, (
        err.response.status_code,
        getattr(err, "code", None),
        str(err),
    )


def txids(msgs: List[Dict[str, Any]]) -> List[str]:
    return [m["transactionId"] for m in msgs]


async def wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s}s waiting for {what}"
        await asyncio.sleep(0.1)


# ---------------------------------------------------------------------------
# admin views
# ---------------------------------------------------------------------------


def test_admin_health_overview_and_queue_detail_count_what_happened(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("adminview")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            a = queen.admin
            health = await a.health()
            assert health["status"] == "healthy" and health.get("version"), health

            before = await a.get_overview()
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-a{i}", "data": {"i": i}} for i in range(3)], partition="pa")
            await push(queen, q, [{"transactionId": f"{q}-b0", "data": {"i": 9}}], partition="pb")
            after = await a.get_overview()
            assert after["queues"] == before["queues"] + 1, (before, after)
            assert after["partitions"] == before["partitions"] + 2, (before, after)
            assert after["messages"]["total"] == before["messages"]["total"] + 4, (before, after)

            detail = await a.get_queue(q)
            assert detail["name"] == q and detail["partitions"] == 2, detail
            assert detail["messages"]["total"] == 4 and detail["messages"]["pending"] == 4, detail
            parts = {p["name"]: p for p in detail["partitionList"]}
            assert sorted(parts) == ["pa", "pb"] and parts["pa"]["depth"] == 3 and parts["pb"]["depth"] == 1, parts

            # Three settled in queue mode: the detail's pending follows, the total does not.
            got = await collect(queen, q, expected=3, partition="pa")
            assert txids(got) == [f"{q}-a{i}" for i in range(3)], got
            detail = await a.get_queue(q)
            assert detail["messages"]["total"] == 4 and detail["messages"]["pending"] == 1, detail
            assert (await a.get_overview())["messages"]["pending"] == before["messages"]["pending"] + 1

            with pytest.raises(Exception) as missing:
                await a.get_queue(qname("nosuch"))
            refused(missing, 404, "queue_not_found")

    run(scenario())


def test_consumer_group_views_and_lagging_threshold(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("groups")
        slow, done = f"slow-{q}", f"done-{q}"
        async with open_queen(baton_url, retry_attempts=1) as queen:
            a = queen.admin
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(5)])
            assert len(await collect(queen, q, expected=2, group=slow, batch=2)) == 2
            assert len(await collect(queen, q, expected=5, group=done)) == 5

            listed = {g["name"]: g for g in await a.list_consumer_groups()}
            assert listed[slow]["totalLag"] == 3 and listed[done]["totalLag"] == 0, listed
            one = await a.get_consumer_group(slow)
            assert one["name"] == slow and one["totalLag"] == 3, one
            [p] = one["partitions"]
            assert (p["queue"], p["partition"], p["offset"], p["lag"]) == (q, "Default", 2, 3), p
            with pytest.raises(Exception) as missing:
                await a.get_consumer_group(f"nobody-{q}")
            refused(missing, 404, "group_not_found")

            # The oldest message `slow` has not settled is over a second old now.
            await asyncio.sleep(1.5)
            lagging = {g["name"]: g for g in await a.get_lagging_consumers(1)}
            assert slow in lagging and done not in lagging, lagging
            [lp] = lagging[slow]["partitions"]
            assert lp["queue"] == q and lp["lag"] == 3 and lp["timeLagSeconds"] >= 1, lp
            # ... but not an hour old, nor a minute (the client's default threshold).
            assert slow not in {g["name"] for g in await a.get_lagging_consumers(3600)}
            assert slow not in {g["name"] for g in await a.get_lagging_consumers()}

            # Caught up, it lags no more at any threshold.
            assert len(await collect(queen, q, expected=3, group=slow)) == 3
            assert slow not in {g["name"] for g in await a.get_lagging_consumers(0)}
            assert {g["name"]: g for g in await a.list_consumer_groups()}[slow]["totalLag"] == 0

    run(scenario())


# ---------------------------------------------------------------------------
# consumer groups: moved in time, deleted
# ---------------------------------------------------------------------------


def test_update_consumer_group_timestamp_moves_the_group_to_that_time(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("groupts")
        g, h = f"g-{q}", f"h-{q}"
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-old{i}", "data": {"i": i}} for i in range(3)])
            await asyncio.sleep(0.4)
            mark = iso_now()
            await asyncio.sleep(0.4)
            await push(queen, q, [{"transactionId": f"{q}-new{i}", "data": {"i": i}} for i in range(2)])
            assert len(await collect(queen, q, expected=5, group=g)) == 5
            assert len(await collect(queen, q, expected=5, group=h)) == 5

            # Back to `mark`: g reads what was pushed after it, once; h is not moved.
            moved = await queen.update_consumer_group_timestamp(g, mark)
            assert moved.get("success") is True and moved.get("queues") == [q], moved
            again = await collect(queen, q, expected=2, group=g)
            assert txids(again) == [f"{q}-new0", f"{q}-new1"], again
            await assert_nothing_delivered(queen, q, group=g, why="only what came after the timestamp")
            await assert_nothing_delivered(queen, q, group=h, why="another group is not moved")

            # Before everything: all five again, in order.
            moved = await queen.update_consumer_group_timestamp(g, "2020-01-01T00:00:00Z")
            assert moved.get("success") is True, moved
            assert len(txids(await collect(queen, q, expected=5, group=g))) == 5

            # Refused, it moves nothing.
            with pytest.raises(Exception) as bad:
                await queen.update_consumer_group_timestamp(g, "yesterday")
            refused(bad, 400, "invalid_timestamp")
            await assert_nothing_delivered(queen, q, group=g, why="a refused move changes nothing")

    run(scenario())


def test_delete_consumer_group_starts_the_group_over(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("groupdel")
        g, h = f"g-{q}", f"h-{q}"
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            first = await collect(queen, q, expected=3, group=g)
            assert len(await collect(queen, q, expected=3, group=h)) == 3
            await assert_nothing_delivered(queen, q, group=g, why="g has settled everything")

            res = await queen.delete_consumer_group(g)
            assert res.get("success") is True, res
            with pytest.raises(Exception) as gone:
                await queen.admin.get_consumer_group(g)
            refused(gone, 404, "group_not_found")
            assert g not in {x["name"] for x in await queen.admin.list_consumer_groups()}

            # The group starts over: every message again, in order; h keeps its place.
            over = await collect(queen, q, expected=3, group=g)
            assert txids(over) == txids(first), (over, first)
            await assert_nothing_delivered(queen, q, group=h, why="another group keeps its place")

            # Without deleting its metadata, the same.
            res = await queen.delete_consumer_group(g, delete_metadata=False)
            assert res.get("success") is True, res
            assert len(await collect(queen, q, expected=3, group=g)) == 3

            # The queue-mode group holds every queue's acks: refused, and nothing moves.
            with pytest.raises(Exception) as reserved:
                await queen.delete_consumer_group("__QUEUE_MODE__")
            refused(reserved, 400, "reserved_group")

    run(scenario())


def test_clear_queue_and_move_message_to_dlq_raise_before_any_request(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("noroute")
        g = f"g-{q}"
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q, {"retryLimit": 5, "dlqAfterMaxRetries": True})
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(2)])
            [m] = await queen.queue(q).group(g).batch(1).wait(False).pop()

            http = queen.admin._http_client
            sent: List[str] = []
            saved = {}
            for verb in ("get", "post", "put", "delete"):
                saved[verb] = getattr(http, verb)

                def record(*args, _verb=verb, **kwargs):
                    sent.append(f"{_verb} {args[:1]}")
                    return saved[_verb](*args, **kwargs)

                setattr(http, verb, record)
            try:
                with pytest.raises(NotImplementedError):
                    await queen.admin.move_message_to_dlq(m["partitionId"], m["transactionId"])
                with pytest.raises(NotImplementedError):
                    await queen.admin.clear_queue(q)
                with pytest.raises(NotImplementedError):
                    await queen.admin.clear_queue(q, partition="Default")
            finally:
                for verb, fn in saved.items():
                    setattr(http, verb, fn)
            assert sent == [], f"the client sent requests: {sent}"

            # Nothing changed on the server: both messages are there, nothing is dead-lettered,
            # and the leased one is still g's to ack.
            detail = await queen.admin.get_queue(q)
            assert detail["messages"]["total"] == 2 and detail["messages"]["deadLetter"] == 0, detail
            assert not (await queen.queue(q).dlq(g).get()).get("messages")
            assert (await queen.ack(m, True, {"group": g})).get("success") is True
            assert txids(await collect(queen, q, expected=1, group=g)) == [f"{q}-1"]
            assert len(await collect(queen, q, expected=2, group=f"other-{q}")) == 2

    run(scenario())


# ---------------------------------------------------------------------------
# KV
# ---------------------------------------------------------------------------


def test_kv_put_if_absent_once_incr_and_check_under_concurrency(baton_url: str) -> None:
    async def scenario() -> None:
        ns = qname("kvatomic")
        async with open_queen(baton_url) as queen:
            kv = queen.kv

            # Eight writers race for one key: exactly one applies, the others see its row.
            results = await asyncio.gather(*(kv.put_if_absent(ns, "owner", f"w{i}", forever=True) for i in range(8)))
            winners = [i for i, r in enumerate(results) if r["applied"]]
            assert len(winners) == 1, results
            winner = f"w{winners[0]}"
            for r in results:
                if not r["applied"]:
                    assert r["reason"] == "exists" and r["value"] == winner, r
            row = await kv.get(ns, "owner")
            assert row["value"] == winner, row

            # once: one claim per key; another key is another claim.
            claims = await asyncio.gather(*(kv.once(ns, "job-1", forever=True) for _ in range(8)))
            assert claims.count(True) == 1 and claims.count(False) == 7, claims
            assert await kv.once(ns, "job-2", forever=True) is True
            assert await kv.once(ns, "job-1", forever=True) is False
            assert (await kv.get(ns, "job-1"))["value"] is True

            # incr: ten concurrent +1 each answer a distinct new value; a later get agrees.
            incs = await asyncio.gather(*(kv.incr(ns, "hits", forever=True) for _ in range(10)))
            assert sorted(r["value"] for r in incs) == list(range(1, 11)), incs
            assert (await kv.get(ns, "hits"))["value"] == 10
            capped = await kv.incr(ns, "hits", delta=1, max=10, forever=True)
            assert capped["applied"] is False and (await kv.get(ns, "hits"))["value"] == 10, capped
            down = await kv.incr(ns, "hits", delta=-3, min=0, forever=True)
            assert down["applied"] is True and down["value"] == 7, down
            assert (await kv.incr(ns, "fresh", delta=5, forever=True))["value"] == 5

            # check: a precondition that writes nothing.
            row = await kv.get(ns, "owner")
            held = await kv.check(ns, "owner", expect=row["version"])
            assert held["applied"] is True, held
            stale = await kv.check(ns, "owner", expect=row["version"] + 1)
            assert stale["applied"] is False and stale["reason"] == "version", stale
            exists = await kv.check(ns, "owner", expect=0)
            assert exists["applied"] is False and exists["reason"] == "exists", exists
            assert (await kv.check(ns, "nobody", expect=0))["applied"] is True
            absent = await kv.check(ns, "nobody", expect=3)
            assert absent["applied"] is False and absent["reason"] == "absent", absent
            assert (await kv.get(ns, "owner"))["version"] == row["version"], "a check wrote"
            assert not (await kv.get(ns, "nobody"))["found"], "a check created a key"

    run(scenario())


def test_kv_get_many_get_prefix_and_list_all(baton_url: str) -> None:
    async def scenario() -> None:
        ns, other = qname("kvread"), qname("kvother")
        async with open_queen(baton_url) as queen:
            kv = queen.kv
            for i in range(1, 8):
                await kv.put(ns, f"u:{i}", {"n": i}, forever=True)
            await kv.put(ns, "v:1", "not under u:", forever=True)
            await kv.put(other, "u:1", "another namespace", forever=True)
            assert (await kv.delete(ns, "u:3"))["applied"] is True

            many = await kv.get_many(ns, ["u:1", "u:3", "nope", "v:1"])
            assert {r["key"]: r["value"] for r in many["rows"]} == {"u:1": {"n": 1}, "v:1": "not under u:"}, many
            assert sorted(many["missing"]) == ["nope", "u:3"], many

            page = await kv.get_prefix(ns, "u:", limit=3)
            assert [r["key"] for r in page["rows"]] == ["u:1", "u:2", "u:4"], page
            assert page["truncated"] is True and page["nextAfter"] == "u:4", page
            page = await kv.get_prefix(ns, "u:", after="u:4", limit=3)
            assert [r["key"] for r in page["rows"]] == ["u:5", "u:6", "u:7"], page
            keys = await kv.get_prefix(ns, "u:", keys_only=True)
            assert [r["key"] for r in keys["rows"]] == ["u:1", "u:2", "u:4", "u:5", "u:6", "u:7"], keys
            assert all("value" not in r for r in keys["rows"]), keys
            assert not (await kv.get_prefix(ns, "w:"))["rows"]

            rows = await kv.list_all(ns, "u:", limit=2)
            assert [(r["key"], r["value"]) for r in rows] == [(f"u:{i}", {"n": i}) for i in (1, 2, 4, 5, 6, 7)], rows
            assert [r["key"] for r in await kv.list_all(ns, "u:", limit=2, max_rows=4)] == ["u:1", "u:2", "u:4", "u:5"]
            assert [r["value"] for r in await kv.list_all(other, "u:")] == ["another namespace"]

    run(scenario())


# ---------------------------------------------------------------------------
# locks
# ---------------------------------------------------------------------------


def test_lock_handle_identity_and_on_lost_when_the_permit_is_taken(baton_url: str) -> None:
    async def scenario() -> None:
        name = qname("lock")
        async with open_queen(baton_url) as queen, open_queen(baton_url) as rival_client:
            lost: List[str] = []
            lock = queen.lock(name, ttl_seconds=6, renew_every=1.0)
            assert lock.on_lost(lost.append) is lock
            assert lock.name == name and lock.ttl_seconds == 6 and lock.owner, (lock.name, lock.owner)
            named = queen.lock(name, ttl_seconds=5, owner=f"me-{name}")
            assert named.owner == f"me-{name}" and named.ttl_seconds == 5 and named.name == name

            assert await lock.acquire() is True
            token, slot = lock.token, lock.slot
            info = await queen.locks.get(name)
            assert info["held"] is True and [h["owner"] for h in info["holders"]] == [lock.owner], info
            held_for = parse_iso(info["holders"][0]["expiresAt"]) - time.time()
            assert 3 < held_for <= 7, info
            rival = rival_client.lock(name, ttl_seconds=30, auto_renew=False)
            assert await rival.acquire() is False

            # The permit is released behind the handle's back: its next renew is told it is
            # lost, and on_lost runs with that reason.
            assert (await queen.locks.release(name, token=token, slot=slot))["released"] is True
            await asyncio.wait_for(lock.lost.wait(), 10)
            assert lost == ["renew"] and not lock.held and lock.token is None, lost
            assert await rival.acquire() is True
            assert (await queen.locks.get(name))["holders"][0]["owner"] == rival.owner

            # A permit whose lifetime runs out unrenewed is lost too ('expired'), and taken.
            name2 = qname("lock2")
            lost2: List[str] = []
            short = queen.lock(name2, ttl_seconds=1, auto_renew=False).on_lost(lost2.append)
            assert short.ttl_seconds == 1 and await short.acquire() is True
            await asyncio.wait_for(short.lost.wait(), 10)
            assert lost2 == ["expired"], lost2
            other = rival_client.lock(name2, ttl_seconds=30, auto_renew=False)
            await wait_until(other.acquire, 10, "the expired permit to be free")
            assert await short.renew() is False and lost2 == ["expired"], "on_lost ran twice"

    run(scenario())


def test_locks_release_all_gives_back_every_permit_of_the_client(baton_url: str) -> None:
    async def scenario() -> None:
        a_name, b_name, sem_name, theirs = (qname(t) for t in ("rla", "rlb", "rls", "rlt"))
        async with open_queen(baton_url) as queen, open_queen(baton_url) as other:
            mine = [
                queen.lock(a_name, ttl_seconds=30, auto_renew=False),
                queen.lock(b_name, ttl_seconds=30, auto_renew=False),
                queen.semaphore(sem_name, 2, ttl_seconds=30, auto_renew=False),
            ]
            for lock in mine:
                assert await lock.acquire() is True
            keep = other.lock(theirs, ttl_seconds=30, auto_renew=False)
            assert await keep.acquire() is True
            assert await other.lock(a_name, ttl_seconds=30, auto_renew=False).acquire() is False

            assert await queen.locks.release_all() == 3
            for lock in mine:
                assert not lock.held, lock.name
                assert (await queen.locks.get(lock.name))["held"] is False, lock.name
            assert await queen.locks.release_all() == 0
            # Another client's permit is not this client's to give back.
            assert (await other.locks.get(theirs))["holders"][0]["owner"] == keep.owner
            assert await other.lock(a_name, ttl_seconds=30, auto_renew=False).acquire() is True
            assert await other.lock(b_name, ttl_seconds=30, auto_renew=False).acquire() is True

    run(scenario())


# ---------------------------------------------------------------------------
# client-side buffers and close()
# ---------------------------------------------------------------------------


def test_flush_all_buffers_sends_every_buffered_push_once(baton_url: str) -> None:
    async def scenario() -> None:
        q1, q2 = qname("buf1"), qname("buf2")
        async with open_queen(baton_url) as queen:
            await configure(queen, q1)
            await configure(queen, q2)
            stats = queen.get_buffer_stats()
            assert set(stats) == {"activeBuffers", "totalBufferedMessages", "oldestBufferAge", "flushesPerformed"}
            assert stats["totalBufferedMessages"] == 0, stats

            await queen.queue(q1).buffer(BUFFER).push([{"transactionId": f"{q1}-{i}", "data": {"i": i}} for i in range(3)])
            await queen.queue(q2).partition("px").buffer(BUFFER).push(
                [{"transactionId": f"{q2}-{i}", "data": {"i": i}} for i in range(2)]
            )
            stats = queen.get_buffer_stats()
            assert stats["activeBuffers"] == 2 and stats["totalBufferedMessages"] == 5, stats
            assert stats["oldestBufferAge"] >= 0, stats
            # Still only in the client.
            for q in (q1, q2):
                assert (await queen.admin.get_queue(q))["messages"]["total"] == 0
            await assert_nothing_delivered(queen, q1, why="a buffered push is not sent before its flush")

            await queen.flush_all_buffers()
            after = queen.get_buffer_stats()
            assert after["totalBufferedMessages"] == 0, after
            assert after["flushesPerformed"] > stats["flushesPerformed"], (stats, after)
            assert (await queen.admin.get_queue(q1))["messages"]["total"] == 3
            assert (await queen.admin.get_queue(q2))["messages"]["total"] == 2

            await queen.flush_all_buffers()  # nothing left: sends nothing again
            got1 = await collect(queen, q1, expected=3)
            got2 = await collect(queen, q2, expected=2, partition="px")
            assert txids(got1) == [f"{q1}-{i}" for i in range(3)], got1
            assert txids(got2) == [f"{q2}-{i}" for i in range(2)], got2
            await assert_nothing_delivered(queen, q1, why="each buffered message once")
            await assert_nothing_delivered(queen, q2, why="each buffered message once")
            assert (await queen.admin.get_queue(q1))["messages"]["total"] == 3

    run(scenario())


def test_close_drains_buffers_gives_back_locks_and_takes_no_more(baton_url: str) -> None:
    async def scenario() -> None:
        q, name = qname("close"), qname("closelock")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await queen.queue(q).buffer(BUFFER).push([{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(4)])
            lock = queen.lock(name, ttl_seconds=60)
            assert await lock.acquire() is True
            assert queen.get_buffer_stats()["totalBufferedMessages"] == 4

            await queen.close()
            assert queen.get_buffer_stats()["totalBufferedMessages"] == 0
            assert not lock.held
            with pytest.raises(Exception) as closed:
                await queen.queue(q).buffer(BUFFER).push([{"transactionId": f"{q}-late", "data": {}}])
            assert "closed" in str(closed.value), repr(closed.value)

        async with open_queen(baton_url) as again:
            got = await collect(again, q, expected=4)
            assert txids(got) == [f"{q}-{i}" for i in range(4)], got
            await assert_nothing_delivered(again, q, why="close sent each buffered message once, and no later one")
            assert (await again.locks.get(name))["held"] is False
            assert await again.lock(name, ttl_seconds=30, auto_renew=False).acquire() is True

    run(scenario())


def test_ephemeral_flush_sends_one_queue_partitions_buffer(baton_url: str) -> None:
    async def scenario() -> None:
        eq = qname("ephbuf")
        opts = {"interval_millis": 60_000, "message_count": 1000}
        async with open_queen(baton_url) as queen:
            eph = queen.ephemeral
            await eph.configure(eq)
            r = await eph.push(eq, [{"n": i} for i in range(3)], buffered=opts)
            assert r == {"buffered": True, "count": 3}, r
            await eph.push(eq, [{"n": 10}], partition="p2", buffered=opts)
            assert (await eph.depth(eq))["length"] == 0, "sent before its flush"

            await eph.flush(eq)
            assert (await eph.depth(eq))["length"] == 3, "flush(queue) sends the queue's default buffer"
            await eph.flush(eq)
            assert (await eph.depth(eq))["length"] == 3, "a second flush sent something again"
            await eph.flush(eq, partition="p2")
            assert (await eph.depth(eq))["length"] == 4

            popped = await eph.pop(eq, batch=10, auto_ack=True)
            payloads = sorted(m["payload"]["n"] for m in popped["messages"])
            assert payloads == [0, 1, 2, 10], popped
            assert (await eph.pop(eq, batch=10))["messages"] == []

    run(scenario())


# ---------------------------------------------------------------------------
# timers
# ---------------------------------------------------------------------------


def test_timers_peek_list_all_and_cancel(baton_url: str) -> None:
    async def scenario() -> None:
        q, q2 = qname("tpeek"), qname("tpeek2")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            t = queen.timers
            await configure(queen, q)
            await configure(queen, q2)
            for i in range(5):
                await t.schedule(q, f"k{i}", {"n": i}, delay_ms=60_000, txn=f"{q}-k{i}")
            await t.schedule(q2, "k0", {"n": 99}, delay_ms=60_000)

            seen = await t.peek(q, "k2")
            assert seen["found"] is True and seen["timerKey"] == "k2" and seen["txn"] == f"{q}-k2", seen
            assert json.loads(base64.b64decode(seen["payload"])) == {"n": 2}, seen
            assert 50 < parse_iso(seen["deliverAt"]) - time.time() <= 61, seen
            nothing = await t.peek(q, "nope")
            assert nothing["found"] is False and not nothing, nothing

            rows = await t.list_all(q, limit=2)
            assert [r["timerKey"] for r in rows] == [f"k{i}" for i in range(5)], rows
            assert [r["txn"] for r in rows] == [f"{q}-k{i}" for i in range(5)], rows
            assert len(await t.list_all(q, limit=2, max_rows=3)) == 3
            assert [r["timerKey"] for r in await t.list_all(q2)] == ["k0"]

            gone = await t.cancel(q, "k1", txn=f"{q}-k1")
            assert gone["ok"] is True and gone["status"] == "cancelled" and gone.get("txn") == f"{q}-k1", gone
            assert [r["timerKey"] for r in await t.list_all(q)] == ["k0", "k2", "k3", "k4"]
            again = await t.cancel(q, "k1", txn=f"{q}-k1")
            assert again["status"] == "absent" and again.get("txn") == f"{q}-k1", again
            assert (await t.peek(q, "k1"))["found"] is False

            # Due in 300 ms: the cancelled one never fires; the one left alone does.
            await t.schedule(q2, "doomed", {"fire": "no"}, delay_ms=300, txn=f"{q2}-doomed")
            await t.schedule(q2, "kept", {"fire": "yes"}, delay_ms=300, txn=f"{q2}-kept")
            assert (await t.cancel(q2, "doomed"))["status"] == "cancelled"
            got = await collect(queen, q2, expected=1, deadline_s=10)
            assert txids(got) == [f"{q2}-kept"], got
            await asyncio.sleep(1.0)
            await assert_nothing_delivered(queen, q2, why="a cancelled timer never fires")

    run(scenario())


def test_timers_reschedule_moves_the_fire_time(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("tmove")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            t = queen.timers
            await configure(queen, q)
            first = await t.schedule(q, "late", {"v": 1}, delay_ms=60_000, txn=f"{q}-late")
            assert first["status"] == "scheduled", first
            # Brought forward, with a new payload: it fires soon, once, with that payload.
            moved = await t.reschedule(q, "late", {"v": 2}, delay_ms=300, txn=f"{q}-late")
            assert moved["status"] == "rescheduled" and moved["deliverAt"] < first["deliverAt"], (first, moved)
            started = time.monotonic()
            got = await collect(queen, q, expected=1, deadline_s=10)
            assert [(m["transactionId"], m["data"]) for m in got] == [(f"{q}-late", {"v": 2})], got
            assert time.monotonic() - started < 8
            assert (await t.peek(q, "late"))["found"] is False

            # Pushed back: it does not fire at its old time.
            await t.schedule(q, "early", {"v": 3}, delay_ms=400)
            later = await t.reschedule(q, "early", {"v": 4}, delay_ms=60_000)
            assert later["status"] == "rescheduled", later
            await asyncio.sleep(1.2)
            await assert_nothing_delivered(queen, q, why="a timer pushed back does not fire at its old time")
            seen = await t.peek(q, "early")
            assert seen["found"] is True and json.loads(base64.b64decode(seen["payload"])) == {"v": 4}, seen
            assert parse_iso(seen["deliverAt"]) - time.time() > 50, seen
            assert (await t.cancel(q, "early"))["status"] == "cancelled"

    run(scenario())


def test_timer_builder_after_txn_reschedule_and_cancel(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("tbuild")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)
            builder = queen.timer(q).key("a").payload({"v": 1})
            assert builder.after(timedelta(seconds=30)) is builder and builder.txn(f"{q}-a") is builder
            r = await builder.schedule()
            assert r["status"] == "scheduled" and r.get("txn") == f"{q}-a", r
            assert 25 < parse_iso(r["deliverAt"]) - time.time() <= 31, r
            assert (await queen.timers.peek(q, "a"))["txn"] == f"{q}-a"

            # reschedule() through the builder: sooner, new payload, same txn.
            r2 = await queen.timer(q).key("a").payload({"v": 2}).after(timedelta(milliseconds=200)).txn(f"{q}-a").reschedule()
            assert r2["status"] == "rescheduled" and r2["deliverAt"] < r["deliverAt"] and r2.get("txn") == f"{q}-a", r2
            [m] = await collect(queen, q, expected=1, deadline_s=10)
            # The txn is the transaction id of the message the timer becomes.
            assert m["transactionId"] == f"{q}-a" and m["data"] == {"v": 2}, m

            # cancel() through the builder: it never fires; asked again, it is absent, and
            # the answer carries the txn back so the caller can look for it in the queue.
            doomed = queen.timer(q).key("b").payload({"v": 3}).after(timedelta(milliseconds=500)).txn(f"{q}-b")
            assert (await doomed.schedule())["status"] == "scheduled"
            c = await doomed.cancel()
            assert c["status"] == "cancelled" and c.get("txn") == f"{q}-b", c
            c2 = await doomed.cancel()
            assert c2["status"] == "absent" and c2.get("txn") == f"{q}-b" and c2.get("ok") is False and not c2, c2
            await asyncio.sleep(1.5)
            await assert_nothing_delivered(queen, q, why="a timer cancelled through its builder never fires")

    run(scenario())


def test_transaction_timer_after_txn_reschedule_cancel_commit_as_one(baton_url: str) -> None:
    async def scenario() -> None:
        q, ns = qname("ttx"), qname("ttxns")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)

            # A push, a KV write and a timer in one transaction: all of it commits.
            tx = queen.transaction()
            tx.queue(q).push([{"transactionId": f"{q}-p1", "data": {"p": 1}}])
            tx.kv.put(ns, "step", 1, forever=True)
            tx.timer(q).key("t").payload({"v": 1}).after(timedelta(seconds=30)).txn(f"{q}-t").schedule()
            r = await tx.commit()
            assert r.get("success") is True, r
            seen = await queen.timers.peek(q, "t")
            assert seen["found"] is True and seen["txn"] == f"{q}-t", seen
            first_at = seen["deliverAt"]
            assert (await queen.kv.get(ns, "step"))["value"] == 1
            assert txids(await collect(queen, q, expected=1)) == [f"{q}-p1"]

            # A required precondition fails: the push, the reschedule and the new timer are
            # all left out with it.
            tx = queen.transaction()
            tx.kv.check(ns, "step", expect=0, required=True)
            tx.queue(q).push([{"transactionId": f"{q}-p2", "data": {"p": 2}}])
            tx.timer(q).key("t").payload({"v": 9}).after(timedelta(milliseconds=100)).txn(f"{q}-t").reschedule()
            tx.timer(q).key("u").payload({"v": 9}).after(timedelta(milliseconds=100)).txn(f"{q}-u").schedule()
            r = await tx.commit()
            assert r.get("success") is False and r.get("reason") == "kv_precondition", r
            assert (await queen.timers.peek(q, "t"))["deliverAt"] == first_at
            assert (await queen.timers.peek(q, "u"))["found"] is False
            await asyncio.sleep(0.8)
            await assert_nothing_delivered(queen, q, why="a rolled-back transaction pushed and fired nothing")

            # Rescheduled in a transaction with a push: both land; the timer fires once, as its txn.
            tx = queen.transaction()
            tx.queue(q).push([{"transactionId": f"{q}-p3", "data": {"p": 3}}])
            tx.timer(q).key("t").payload({"v": 2}).after(timedelta(milliseconds=200)).txn(f"{q}-t").reschedule()
            r = await tx.commit()
            assert r.get("success") is True, r
            got = await collect(queen, q, expected=2, deadline_s=10)
            assert sorted((m["transactionId"], json.dumps(m["data"])) for m in got) == sorted(
                [(f"{q}-p3", json.dumps({"p": 3})), (f"{q}-t", json.dumps({"v": 2}))]
            ), got

            # Cancelled in a transaction: it never fires.
            r = await queen.transaction().timer(q).key("w").payload({"v": 3}).after(timedelta(milliseconds=600)).schedule().commit()
            assert r.get("success") is True, r
            r = await queen.transaction().timer(q).key("w").txn(f"{q}-w").cancel().commit()
            assert r.get("success") is True and [x.get("status") for x in r["results"]] == ["cancelled"], r
            await asyncio.sleep(1.2)
            await assert_nothing_delivered(queen, q, why="a timer cancelled in a transaction never fires")

    run(scenario())
