"""
Compatibility tests, continued: the REAL Queen Python client (queen-mq 2.6.0) against
Baton for the admin calls, locks and semaphores, binary push, traces and the status views.
The conventions are test_queen_client.py's (every scenario bounded by ``run()``).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from conftest import open_queen
from queen_helpers import (
    run,
    qname,
    configure,
    push,
    pop_builder,
    collect,
    seed_and_take,
    assert_nothing_delivered,
)


def test_delete_queue(baton_url: str) -> None:
    """queue(q).delete() -> DELETE /api/v1/resources/queues/{q} succeeds and the
    queue's messages are gone."""

    async def scenario() -> None:
        q = qname("del")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"data": {"d": 1}}])
            await queen.queue(q).delete()  # raises on a non-2xx answer
            assert await pop_builder(queen, q, wait=False).pop() == []

    run(scenario())


def test_seek_consumer_group_without_options_goes_back_to_the_start(baton_url: str) -> None:
    """admin.seek_consumer_group(group, queue) with no options: Queen's client sends no
    body, and the group goes back to the start of the queue (issue 16 item 1; it was a
    400 `empty_body`)."""

    async def scenario() -> None:
        q = qname("seek0")
        async with open_queen(baton_url) as queen:
            first = await seed_and_take(queen, q, 3, group="g-seek")
            assert [m["data"]["i"] for m in first] == [0, 1, 2]
            await assert_nothing_delivered(queen, q, group="g-seek", why="all three were acked")
            r = await queen.admin.seek_consumer_group("g-seek", q)
            assert r.get("success") is True, r
            again = await collect(queen, q, expected=3, group="g-seek")
            assert [m["data"]["i"] for m in again] == [0, 1, 2], "the group starts over after the seek"

    run(scenario())


def test_a_transaction_of_only_kv_or_only_a_timer_commits(baton_url: str) -> None:
    """A transaction holding only a KV write, or only a timer, commits as one entry like
    any other (issue 16 item 1; it was a 400 `empty_transaction`). An empty one is still
    refused by the client itself."""

    async def scenario() -> None:
        q = qname("kvtxn")
        ns = f"ns-{uuid.uuid4().hex[:8]}"
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            tx = queen.transaction()
            tx.kv.put(ns, "k", {"v": 1}, forever=True)
            r = await tx.commit()
            assert r.get("success") is True, r
            got = await queen.kv.get(ns, "k")
            assert got.get("found") is True and got.get("value") == {"v": 1}, got

            r = await queen.transaction().timer(q).key("t1").payload({"fire": 1}).after_ms(3_600_000).schedule().commit()
            assert r.get("success") is True, r
            page = await queen.timers.list(q)
            keys = [t.get("key") or t.get("timerKey") for t in page.get("timers", page.get("rows", []))]
            assert "t1" in keys, page

            with pytest.raises(Exception):
                await queen.transaction().commit()

    run(scenario())


def test_a_pushed_trace_id_comes_back_with_the_message(baton_url: str) -> None:
    """A push's traceId (the client forwards a valid UUID) is stored with the message and
    shown by pops, the DLQ and the message lookup (issue 16 item 1; pops showed null)."""

    async def scenario() -> None:
        q = qname("trace")
        trace = str(uuid.uuid4())
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-t", "traceId": trace, "data": {"t": 1}},
                                  {"transactionId": f"{q}-n", "data": {"t": 2}}])
            got = await collect(queen, q, expected=2, ack=False)
            by_txid = {m["transactionId"]: m for m in got}
            assert by_txid[f"{q}-t"].get("traceId") == trace, by_txid[f"{q}-t"]
            assert by_txid[f"{q}-n"].get("traceId") is None, by_txid[f"{q}-n"]
            await queen.ack(by_txid[f"{q}-t"], "dlq")
            dlq = await queen.queue(q).dlq().limit(10).get()
            rows = dlq.get("messages", []) if isinstance(dlq, dict) else dlq
            assert any(r.get("traceId") == trace for r in rows), dlq

    run(scenario())


def test_admin_metrics_is_json(baton_url: str) -> None:
    """admin.metrics() reads /metrics as JSON, as Queen serves it there (issue 16 item 1;
    it was Prometheus text, which the client read as None). Prometheus text stays at
    /metrics/prometheus (tests/http/http_semantics.rs checks both)."""

    async def scenario() -> None:
        q = qname("metrics")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(2)])
            m = await queen.admin.metrics()
            assert isinstance(m, dict), f"admin.metrics() gave {m!r}"
            assert m["metrics"]["baton_pushed_messages_total"] >= 2, m["metrics"]
            depth = [s for s in m["series"] if s["name"] == "baton_queue_depth" and s["labels"].get("queue") == q]
            assert depth and depth[0]["value"] == 2, depth

    run(scenario())


def test_get_queue_depth_has_queens_fields(baton_url: str) -> None:
    """admin.get_queue_depth(name, group) answers pending, partitionsPending, group,
    conflation and effectivePending, for queue mode and for one group (issue 16 item 1)."""

    async def scenario() -> None:
        q = qname("depth")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(4)])
            d = await queen.admin.get_queue_depth(q)
            assert (d["pending"], d["partitionsPending"], d["effectivePending"]) == (4, 1, 4), d
            assert d["group"] is None and d["conflation"] is False, d
            got = await collect(queen, q, expected=4, group="g-depth")
            assert len(got) == 4
            g = await queen.admin.get_queue_depth(q, group="g-depth")
            assert (g["group"], g["pending"], g["partitionsPending"]) == ("g-depth", 0, 0), g
            assert [p["pending"] for p in g["partitions"]] == [0], g

    run(scenario())


def test_admin_delete_message(baton_url: str) -> None:
    """admin.delete_message(partitionId, transactionId): the message is given to no group
    afterwards and the lookup answers 404 (issue 16 item 1; it was 405)."""

    async def scenario() -> None:
        q = qname("delmsg")
        async with open_queen(baton_url) as queen:
            first = await seed_and_take(queen, q, 3, group="g-before")
            pid = first[1]["partitionId"]
            r = await queen.admin.delete_message(pid, f"{q}-1")
            assert r.get("success") is True and r.get("deleted") is True, r
            with pytest.raises(Exception) as lookup:
                await queen.admin.get_message(pid, f"{q}-1")
            assert "no such message" in str(lookup.value), f"the lookup of a deleted message: {lookup.value!r}"
            later = await collect(queen, q, expected=2, group="g-after")
            assert sorted(m["data"]["i"] for m in later) == [0, 2], [m.get("data") for m in later]
            await assert_nothing_delivered(queen, q, group="g-after", why="the deleted message stays deleted")

    run(scenario())


def test_lock_is_exclusive_and_its_token_fences(baton_url: str) -> None:
    """`client.lock()` (issue 16 item 2): one holder at a time; a second handle is refused
    `held`; a retry with the same owner gets the same permit; the token rises at every
    renew and across a release and a new acquire; the old token cannot release or renew;
    `locks.get` names the holder."""

    async def scenario() -> None:
        name = f"lk-{uuid.uuid4().hex[:8]}"
        async with open_queen(baton_url) as queen:
            a = queen.lock(name, ttl_seconds=30, auto_renew=False)
            b = queen.lock(name, ttl_seconds=30, auto_renew=False)
            assert await a.acquire() is True
            first = a.token
            assert first and a.slot == 0
            assert await b.acquire() is False
            refused = await queen.locks.acquire(name, ttl_seconds=30, owner="someone-else")
            assert refused.get("acquired") is False and refused.get("reason") == "held", refused
            assert refused["holders"][0]["owner"] == a._owner, refused
            again = await queen.locks.acquire(name, ttl_seconds=30, owner=a._owner)
            assert again.get("acquired") is True and again.get("already") is True and again["token"] == first, again
            who = await queen.locks.get(name)
            assert who.get("held") is True and who["holders"][0]["token"] == first, who

            assert await a.renew() is True
            assert a.token > first
            stale = await queen.locks.release(name, token=first)
            assert stale.get("released") is False and stale.get("reason") == "lost", stale
            lost = await queen.locks.renew(name, token=first, ttl_seconds=30)
            assert lost.get("renewed") is False, lost
            second = a.token
            await a.release()
            assert (await queen.locks.get(name)).get("held") is False
            assert await b.acquire() is True
            assert b.token > second, "the token only rises on a lock"
            await b.release()

            # Twenty acquires at once, each its own owner: exactly one permit is given.
            race = f"{name}-race"
            answers = await asyncio.gather(
                *(queen.locks.acquire(race, ttl_seconds=30, owner=f"o{i}") for i in range(20))
            )
            winners = [r for r in answers if r.get("acquired")]
            assert len(winners) == 1, answers
            assert all(r.get("reason") in ("held", "contended") for r in answers if not r.get("acquired")), answers

    run(scenario())


def test_semaphore_holds_at_most_its_limit(baton_url: str) -> None:
    """`client.semaphore(name, n)`: n holders on distinct slots, the next refused until one
    releases."""

    async def scenario() -> None:
        name = f"sem-{uuid.uuid4().hex[:8]}"
        async with open_queen(baton_url) as queen:
            handles = [queen.semaphore(name, 3, ttl_seconds=30, auto_renew=False) for _ in range(4)]
            got = [await h.acquire() for h in handles]
            assert got == [True, True, True, False], got
            assert sorted(h.slot for h in handles[:3]) == [0, 1, 2]
            await handles[1].release()
            assert await handles[3].acquire() is True
            assert handles[3].slot == 1
            for h in handles:
                if h.held:
                    await h.release()

    run(scenario())


def test_a_guarded_transaction_commits_only_while_the_lock_is_held(baton_url: str) -> None:
    """`transaction().guard(lock)`: the guard is judged in the same entry as the pushes. A
    holder whose permit expired and was taken by another commits NOTHING (its push is not
    stored); the new holder's guarded push commits."""

    async def scenario() -> None:
        name = f"gd-{uuid.uuid4().hex[:8]}"
        q = qname("guard")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            old = queen.lock(name, ttl_seconds=1, auto_renew=False)
            assert await old.acquire() is True
            r = await queen.transaction().guard(old).queue(q).push([{"transactionId": "by-old-1", "data": {"n": 1}}]).commit()
            assert r.get("success") is True, r
            stale_guard = old.guard()
            await asyncio.sleep(1.6)
            new = queen.lock(name, ttl_seconds=30, auto_renew=False)
            assert await new.acquire() is True, "the expired permit is free"
            # The old holder, paused past its lifetime, sends its step with its guard.
            r = await queen._http_client.post(
                "/api/v1/transaction",
                {"operations": [{"type": "push", "items": [{"queue": q, "transactionId": "by-old-2", "payload": {"n": 2}}]}],
                 "requiredLeases": [], "kv": [stale_guard]},
            )
            assert r.get("success") is False and r.get("reason") == "kv_precondition", r
            r = await queen.transaction().guard(new).queue(q).push([{"transactionId": "by-new", "data": {"n": 3}}]).commit()
            assert r.get("success") is True, r
            await new.release()
            msgs = await queen.queue(q).batch(10).wait(False).pop()
            assert sorted(m["transactionId"] for m in msgs) == ["by-new", "by-old-1"], msgs

    run(scenario())


def test_locks_refuse_bad_input(baton_url: str) -> None:
    """Malformed lock operations are a 400 with a precise code and change nothing."""
    import json
    import urllib.error
    import urllib.request

    def post(body: object) -> tuple[int, dict]:
        req = urllib.request.Request(f"{baton_url}/api/v1/locks", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    cases = [
        ({"operations": [{"op": "acquire", "name": "a#b", "ttlSeconds": 5}]}, "invalid_name"),
        ({"operations": [{"op": "acquire", "name": "x" * 257, "ttlSeconds": 5}]}, "invalid_name"),
        ({"operations": [{"op": "acquire", "name": "ok"}]}, "invalid_ttl"),
        ({"operations": [{"op": "acquire", "name": "ok", "ttlSeconds": 5, "limit": 5000}]}, "invalid_limit"),
        ({"operations": [{"op": "release", "name": "ok"}]}, "missing_token"),
        ({"operations": [{"op": "steal", "name": "ok"}]}, "invalid_op"),
        ({"operations": [{"op": "get", "name": "ok"}] * 65}, "too_many_operations"),
        ({"operations": []}, "empty_operations"),
    ]
    for body, code in cases:
        status, answer = post(body)
        assert (status, answer.get("code")) == (400, code), (body if len(str(body)) < 200 else code, answer)
    status, answer = post({"operations": [{"op": "get", "name": "ok"}]})
    assert status == 200 and answer["results"][0]["held"] is False, answer


def test_delete_consumer_group_for_queue_forgets_only_that_queue(baton_url: str) -> None:
    """admin.delete_consumer_group_for_queue(g, q): the group's place on q is forgotten (it
    reads q from the start again, its lease there is void) while its place on another queue
    stays; unknown names and the queue-mode group are refused."""

    async def scenario() -> None:
        qa, qb = qname("dga"), qname("dgb")
        async with open_queen(baton_url) as queen:
            for q in (qa, qb):
                await configure(queen, q)
                await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            assert [m["data"]["i"] for m in await collect(queen, qa, expected=3, group="g")] == [0, 1, 2]
            two = await queen.queue(qb).group("g").batch(2).wait(False).pop()
            assert [m["data"]["i"] for m in two] == [0, 1]
            await queen.ack(two, True, {"group": "g"})
            held = await queen.queue(qb).group("g").batch(1).wait(False).pop()
            assert [m["data"]["i"] for m in held] == [2]

            r = await queen.admin.delete_consumer_group_for_queue("g", qa)
            assert r.get("success") is True and r.get("partitions") == 1, r
            again = await collect(queen, qa, expected=3, group="g")
            assert [m["data"]["i"] for m in again] == [0, 1, 2], "q is read from the start again"
            await assert_nothing_delivered(queen, qb, group="g", why="the lease on the other queue stands")
            acked = await queen.ack(held[0], True, {"group": "g"})
            assert acked.get("success") is True, acked

            r = await queen.admin.delete_consumer_group_for_queue("g", qb)
            assert r.get("partitions") == 1, r
            acked_after = await queen.ack(held[0], True, {"group": "g"})
            assert acked_after.get("success") is False, "a lease of a forgotten place is void"

            for group, q in (("nobody", qa), ("g", "no-such-queue"), ("__QUEUE_MODE__", qa)):
                with pytest.raises(Exception):
                    await queen.admin.delete_consumer_group_for_queue(group, q)

    run(scenario())


def test_get_partitions_and_list_messages_page_through_a_queue(baton_url: str) -> None:
    """admin.get_partitions and admin.list_messages (issue 16 item 2): every partition of a
    queue with its id (the one pops carry); a queue's messages in partition then offset
    order, paged by limit/offset, a deleted message left out; bad input refused."""

    async def scenario() -> None:
        q = qname("browse")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            for part in ("a", "b"):
                await push(queen, q, [{"transactionId": f"{part}-{i}", "data": {"p": part, "i": i}} for i in range(4)], partition=part)
            parts = await queen.admin.get_partitions(queue=q)
            assert sorted(p["name"] for p in parts["partitions"]) == ["a", "b"] and parts["total"] == 2, parts
            popped = await queen.queue(q).partition("a").batch(1).wait(False).pop()
            pid_a = popped[0]["partitionId"]
            assert {p["name"]: p["id"] for p in parts["partitions"]}["a"] == pid_a
            assert all(p["messages"] == 4 for p in parts["partitions"]), parts

            await queen.admin.delete_message(pid_a, "a-2")
            first = await queen.admin.list_messages(queue=q, limit=3)
            assert [m["transactionId"] for m in first["messages"]] == ["a-0", "a-1", "a-3"], first
            rest = await queen.admin.list_messages(queue=q, limit=10, offset=4)
            assert [m["transactionId"] for m in rest["messages"]] == ["b-0", "b-1", "b-2", "b-3"], rest
            assert rest["messages"][0]["data"] == {"p": "b", "i": 0}
            one = await queen.admin.list_messages(queue=q, partition="b", offset=3)
            assert [m["transactionId"] for m in one["messages"]] == ["b-3"], one

            for params in ({}, {"queue": "no-such-queue"}, {"queue": q, "partition": "zz"}, {"queue": q, "limit": "x"}):
                with pytest.raises(Exception):
                    await queen.admin.list_messages(**params)

    run(scenario())


@pytest.mark.parametrize("compression", [False, True])
def test_binary_push_stores_what_json_push_stores(baton_url: str, compression: bool) -> None:
    """Queen(binary_push=True[, push_compression=True]) (issue 16 item 2): the client sends
    its binary push body (QPB1; framed zstd groups with compression); every item is stored
    as a JSON push stores it, a repeated transaction id is a duplicate, and with compression
    a transaction with pushes goes as the binary transaction body (QTB1) and commits whole."""

    async def scenario() -> None:
        q = qname("bin")
        async with open_queen(baton_url, binary_push=True, push_compression=compression) as queen:
            await configure(queen, q)
            items = [{"transactionId": f"b-{i}", "data": {"i": i, "s": "é" * 20}} for i in range(50)]
            items.append({"data": None})
            await push(queen, q, items, partition="p1")
            again = await queen.queue(q).partition("p1").push([{"transactionId": "b-3", "data": {"i": 3}}])
            assert again[0].get("status") == "duplicate", again
            got = await queen.queue(q).batch(100).wait(False).pop()
            assert [m["data"] for m in got[:50]] == [{"i": i, "s": "é" * 20} for i in range(50)], got[:3]
            assert got[50]["data"] is None and len(got) == 51
            assert got[50]["transactionId"], "an empty id is minted"
            await queen.ack(got, True)

            r = await (queen.transaction().queue(q).partition("p2").push([{"transactionId": "t-1", "data": {"t": 1}}]).commit())
            assert r.get("success") is True, r
            [m] = await queen.queue(q).batch(10).wait(False).pop()
            assert (m["transactionId"], m["data"], m["partition"]) == ("t-1", {"t": 1}, "p2")

    run(scenario())


def test_binary_push_refuses_hostile_bodies(baton_url: str) -> None:
    """A forged or cut binary body is a 400 `bad_binary_body` (a zstd bomb a 413) and
    stores nothing."""
    import struct
    import urllib.error
    import urllib.request

    import zstandard

    def post(body: bytes, path: str = "/api/v1/push") -> tuple[int, str]:
        req = urllib.request.Request(f"{baton_url}{path}", data=body, method="POST",
                                     headers={"Content-Type": "application/x-queen-push"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, ""
        except urllib.error.HTTPError as e:
            import json
            return e.code, json.loads(e.read()).get("code", "")

    def text(s: str) -> bytes:
        return struct.pack("<H", len(s)) + s.encode()

    good = b"QPB1\x00" + struct.pack("<I", 1) + text("hostile") + text("p") + struct.pack("<I", 1) + struct.pack("<I", 2) + b"42"
    bomb_raw = zstandard.ZstdCompressor().compress(b"\x00" * (32 << 20))
    cases = [
        (good[:-1], 400, "bad_binary_body"),
        (good + b"\x00", 400, "bad_binary_body"),
        (b"QPB1\x40" + good[5:], 400, "bad_binary_body"),
        (good[:-2] + b"{x", 400, "bad_payload"),
        (b"QPB1\x01" + struct.pack("<I", 1 << 30) + bomb_raw, 413, "body_too_large"),
        (b"QPB1\x01" + struct.pack("<I", 100) + bomb_raw, 413, "body_too_large"),
        (b"QTB1\x00" + struct.pack("<I", 3) + b"{}x", 400, "bad_binary_body"),
    ]
    for body, status, code in cases:
        assert post(body, "/api/v1/transaction" if body.startswith(b"QTB1") else "/api/v1/push") == (status, code), body[:16]

    async def nothing_stored() -> None:
        async with open_queen(baton_url) as queen:
            msgs = await queen.queue("hostile").batch(10).wait(False).pop()
            assert msgs == [], msgs

    run(nothing_stored())
    assert post(good) == (201, "")


def test_traces_from_a_consumer_are_queried_by_message_and_name(baton_url: str) -> None:
    """msg.trace() inside consume() (issue 16 item 2) records events, kept durably; the
    admin queries find them by message, by name (time order, paged) and list the names;
    a malformed trace is refused and stores nothing."""

    async def scenario() -> None:
        q = qname("trace")
        name = f"order-{uuid.uuid4().hex[:6]}"
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"tr-{i}", "data": {"i": i}} for i in range(2)])
            answers = []

            async def handler(msg):
                answers.append(await msg["trace"]({"traceName": name, "eventType": "step", "data": {"seen": msg["data"]["i"]}}))
                answers.append(await msg["trace"]({"data": {"plain": True}}))

            await queen.queue(q).batch(1).each().limit(2).consume(handler)
            assert all(a.get("success") is True for a in answers), answers
            got = await queen.queue(q).batch(1).wait(False).pop()
            assert got == [], "both were acked"

            await push(queen, q, [{"transactionId": "probe", "data": {}}])
            [probe] = await queen.queue(q).batch(1).wait(False).pop()
            pid = probe["partitionId"]
            mine = await queen.admin.get_traces_for_message(pid, "tr-0")
            assert [t["eventType"] for t in mine["traces"]] == ["step", "info"], mine
            assert mine["traces"][0]["data"] == {"seen": 0} and mine["traces"][0]["traceNames"] == [name], mine
            by_name = await queen.admin.get_traces_by_name(name)
            assert [t["data"]["seen"] for t in by_name["traces"]] == [0, 1], by_name
            second = await queen.admin.get_traces_by_name(name, limit=1, offset=1)
            assert [t["data"]["seen"] for t in second["traces"]] == [1], second
            names = await queen.admin.get_trace_names()
            assert name in [n["name"] for n in names["names"]], names

            for bad in ({"transactionId": "x", "partitionId": "nope", "data": {}},
                        {"transactionId": "x", "partitionId": pid, "traceNames": ["a\u0001"], "data": {}},
                        {"transactionId": "x", "partitionId": pid, "traceNames": [f"n{i}" for i in range(17)], "data": {}},
                        {"transactionId": "x", "partitionId": pid}):
                with pytest.raises(Exception):
                    await queen._http_client.post("/api/v1/traces", bad)
            assert (await queen.admin.get_traces_for_message(pid, "x"))["traces"] == []

    run(scenario())


def test_changed_since_lists_partitions_written_since_a_safe_time(baton_url: str) -> None:
    """queue.changed_since(since) (issue 16 item 2): every partition without since; with the
    answer's safeTime as the next since, only the partitions written after it; pages by
    `after`; an unknown queue has none; a malformed entry is refused."""

    async def scenario() -> None:
        q = qname("changed")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            for p in ("a", "b", "c"):
                await push(queen, q, [{"data": {"p": p}}], partition=p)
            first = await queen.queue(q).changed_since(None)
            assert [p["name"] for p in first["partitions"]] == ["a", "b", "c"], first
            assert first["partitions"][0]["lastOffset"] == 0 and first["safeTime"], first
            await push(queen, q, [{"data": {"p": "b"}}, {"data": {"p": "b2"}}], partition="b")
            later = await queen.queue(q).changed_since(first["safeTime"])
            assert [(p["name"], p["lastOffset"]) for p in later["partitions"]] == [("b", 2)], later
            none = await queen.queue(q).changed_since(later["safeTime"])
            assert none["partitions"] == [], none
            assert (await queen.queue("no-such-queue").changed_since(None))["partitions"] == []

            page = await queen._http_client.post("/api/v1/partitions/changed", {"entries": [{"queue": q, "limit": 2}]})
            e = page["entries"][0]
            assert [p["name"] for p in e["partitions"]] == ["a", "b"] and e["next"] == e["partitions"][1]["id"], page
            rest = await queen._http_client.post("/api/v1/partitions/changed", {"entries": [{"queue": q, "after": e["next"]}]})
            assert [p["name"] for p in rest["entries"][0]["partitions"]] == ["c"], rest
            for bad in ({"entries": []}, {"entries": [{"queue": q, "since": "yesterday"}]},
                        {"entries": [{"queue": q, "after": "nope"}]}, {"entries": [{"queue": q, "bogus": 1}]}):
                with pytest.raises(Exception):
                    await queen._http_client.post("/api/v1/partitions/changed", bad)

    run(scenario())


def test_status_and_analytics_views_answer_live_numbers(baton_url: str) -> None:
    """admin.get_status, get_queue_stats, get_queue_detail, get_analytics,
    refresh_consumer_stats, get_system_metrics and get_worker_metrics (issue 16 item 2):
    live numbers that follow what was pushed, popped and acked; an unknown queue is a 404."""

    async def scenario() -> None:
        q = qname("status")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"data": {"i": i}} for i in range(5)], partition="p")
            got = await queen.queue(q).batch(2).wait(False).pop()
            await queen.ack(got, True)
            status = await queen.admin.get_status()
            assert status["status"] == "healthy" and status["queues"] >= 1 and status["throughput"]["pushed"] >= 5, status
            stats = {s["name"]: s for s in (await queen.admin.get_queue_stats())["queues"]}
            assert stats[q]["messages"] == {"total": 5, "pending": 3, "deadLetter": 0}, stats[q]
            detail = await queen.admin.get_queue_detail(q)
            assert detail["partitionList"][0]["name"] == "p" and detail["partitionList"][0]["pending"] == 3, detail
            analytics = await queen.admin.get_analytics(interval="minute")
            assert any(s["name"] == q for s in analytics["queues"]), analytics
            assert (await queen.admin.refresh_consumer_stats())["success"] is True
            system = await queen.admin.get_system_metrics()
            assert system["memory"]["rssBytes"] > 0 and system["openFiles"] > 0, system
            workers = await queen.admin.get_worker_metrics()
            assert any(w["name"] == "baton-planner" for w in workers["workers"]), workers
            with pytest.raises(Exception):
                await queen.admin.get_queue_detail("no-such-queue")

    run(scenario())
