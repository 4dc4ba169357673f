"""
Compatibility tests: the REAL Queen Python client (queen-mq 2.6.0) against Baton.

Every scenario runs inside ``run()``, which bounds it with asyncio.wait_for, and
every wait inside a scenario has its own bound (long polls use short
``timeout_millis``; consume() loops use ``limit`` + ``idle_millis`` and an
outer wait_for). The wire shapes these tests rely on are documented in
docs/queen-client-notes.md.

Client behaviours to keep in mind while reading:
  * ``pop()`` never raises: any HTTP error becomes ``[]`` (and "Pop failed: ..."
    is printed, which pytest shows on failure).
  * ``queen.ack()`` never raises: failures come back as ``{"success": False}``.
  * With pop autopilot on (the default) and no ``.batch(1)``/``.each()``,
    ``consume()`` hands the handler a LIST of messages.
"""


from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List, Optional

import pytest

from conftest import open_queen
from queen_helpers import (
    POLL_MS,
    run,
    qname,
    as_list,
    configure,
    push,
    pop_builder,
    collect,
    assert_nothing_delivered,
    consume_bounded,
    check_message_shape,
)

# ---------------------------------------------------------------------------
# (1) configure + push + consume with auto ack
# ---------------------------------------------------------------------------


def test_configure_push_consume_auto_ack_exactly_once_in_order(baton_url: str) -> None:
    """All pushed payloads are received exactly once, in push order within each
    partition, by a default consume() (autopilot on, handler gets lists, auto
    ack through /api/v1/ack/batch); nothing is left afterwards."""

    async def scenario() -> None:
        q = qname("basic")
        counts = {"pa": 15, "pb": 10}
        total = sum(counts.values())
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": 30, "retryLimit": 3})
            # Interleave pushes to the two partitions, several messages per request.
            for start in range(0, 15, 5):
                for part, n in counts.items():
                    items = [
                        {"transactionId": f"{q}-{part}-{i}", "data": {"p": part, "seq": i}}
                        for i in range(start, min(start + 5, n))
                    ]
                    if items:
                        await push(queen, q, items, partition=part)

            received: List[Dict[str, Any]] = []

            async def handler(batch: Any) -> None:
                received.extend(as_list(batch))

            await consume_bounded(
                queen.queue(q).wait(True).timeout_millis(POLL_MS).limit(total).idle_millis(10_000),
                handler,
            )

            tx_ids = [m.get("transactionId") for m in received]
            assert len(received) == total, f"expected {total} messages, got {len(received)}: {tx_ids}"
            assert len(set(tx_ids)) == total, f"duplicate deliveries: {tx_ids}"
            per_partition: Dict[str, List[int]] = {p: [] for p in counts}
            for m in received:
                check_message_shape(m)
                data = m["data"]
                assert isinstance(data, dict) and data.get("p") in counts, f"payload mangled: {m!r}"
                assert m.get("transactionId") == f"{q}-{data['p']}-{data['seq']}", m
                assert m.get("partition") == data["p"], f"message partition name: {m!r}"
                per_partition[data["p"]].append(data["seq"])
            for part, n in counts.items():
                assert per_partition[part] == list(range(n)), (
                    f"partition {part}: delivered out of order or incomplete: {per_partition[part]}"
                )

            await assert_nothing_delivered(queen, q, why="every message was auto-acked")

    run(scenario())


def test_push_duplicate_transaction_id_is_reported_and_delivered_once(baton_url: str) -> None:
    """The client retries pushes on 5xx with the same transactionId, so the
    broker must dedupe: a second push answers status 'duplicate' (HTTP 200)."""

    async def scenario() -> None:
        q = qname("dup")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-once", "data": {"v": 1}}])
            again = await queen.queue(q).push([{"transactionId": f"{q}-once", "data": {"v": 2}}])
            assert isinstance(again, list) and len(again) == 1, again
            assert again[0].get("status") == "duplicate", f"expected a duplicate verdict, got {again!r}"

            got = await collect(queen, q, expected=1)
            assert [m["data"] for m in got] == [{"v": 1}], got
            assert got[0]["partition"] == "Default", f"push without partition lands on 'Default': {got[0]!r}"
            await assert_nothing_delivered(queen, q, why="the duplicate must not be stored")

    run(scenario())


def test_pop_long_poll_wakes_on_push_and_honours_timeout(baton_url: str) -> None:
    """wait=true blocks until a message arrives (not until the timeout), an
    empty long poll returns after ~timeout ms, and wait=false returns at once."""

    async def scenario() -> None:
        q = qname("poll")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)

            # Empty long poll: must actually wait, and must answer within
            # timeout (+ slack well under the client's timeout+5s).
            t0 = time.monotonic()
            empty = await pop_builder(queen, q, batch=1, wait=True, timeout_ms=1500).pop()
            elapsed = time.monotonic() - t0
            assert empty == []
            assert elapsed >= 1.0, f"wait=true&timeout=1500 answered after {elapsed:.2f}s (must block)"
            assert elapsed <= 5.0, f"wait=true&timeout=1500 answered after {elapsed:.2f}s (too late)"

            # wait=false on an empty queue answers immediately.
            t0 = time.monotonic()
            assert await pop_builder(queen, q, batch=1, wait=False).pop() == []
            assert time.monotonic() - t0 < 2.0

            # A waiting pop is woken by a push.
            async def delayed_push() -> None:
                await asyncio.sleep(0.5)
                await push(queen, q, [{"transactionId": f"{q}-late", "data": {"late": True}}])

            pusher = asyncio.create_task(delayed_push())
            t0 = time.monotonic()
            got = await pop_builder(queen, q, batch=1, wait=True, timeout_ms=10_000).pop()
            elapsed = time.monotonic() - t0
            await pusher
            assert [m.get("data") for m in got] == [{"late": True}], got
            assert elapsed < 6.0, f"long poll returned after {elapsed:.2f}s; should wake on push"
            check_message_shape(got[0])
            res = await queen.ack(got[0], True)
            assert res.get("success") is True, res

    run(scenario())


# ---------------------------------------------------------------------------
# (2) manual ack, no redelivery after ack; leases
# ---------------------------------------------------------------------------


def test_consume_manual_ack_is_not_redelivered(baton_url: str) -> None:
    """consume() with auto_ack(False): the handler acks each message itself
    (POST /api/v1/ack); after the lease time has passed nothing comes back.
    Then the same for a batch ack (POST /api/v1/ack/batch) of popped messages."""

    async def scenario() -> None:
        q = qname("manual")
        lease_s = 2
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": lease_s, "retryLimit": 3})
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])

            received: List[Dict[str, Any]] = []
            ack_results: List[Dict[str, Any]] = []

            async def handler(msg: Any) -> None:
                assert isinstance(msg, dict), f".batch(1).each() hands single messages, got {type(msg)}"
                received.append(msg)
                ack_results.append(await queen.ack(msg, True))

            await consume_bounded(
                queen.queue(q).batch(1).each().auto_ack(False).wait(True).timeout_millis(POLL_MS)
                .limit(3).idle_millis(10_000),
                handler,
            )
            assert [m["data"]["i"] for m in received] == [0, 1, 2], received
            for m in received:
                check_message_shape(m)
            assert all(r.get("success") is True for r in ack_results), ack_results

            await asyncio.sleep(lease_s + 1.5)
            await assert_nothing_delivered(queen, q, why="acked messages must not come back after the lease time")

            # Batch ack of popped messages.
            await push(queen, q, [{"transactionId": f"{q}-b{i}", "data": {"b": i}} for i in range(4)])
            popped = await collect(queen, q, expected=4, batch=4, ack=False)
            assert sorted(m["data"]["b"] for m in popped) == [0, 1, 2, 3], popped
            res = await queen.ack(popped, True)
            assert res.get("success") is True, f"batch ack failed: {res!r}"
            await asyncio.sleep(lease_s + 1.5)
            await assert_nothing_delivered(queen, q, why="batch-acked messages must not come back")

    run(scenario())


def test_unacked_message_is_redelivered_after_lease_expiry(baton_url: str) -> None:
    """Control for the test above: without an ack, the message comes back once
    its lease (leaseTime) expired, with the same transactionId."""

    async def scenario() -> None:
        q = qname("lease")
        lease_s = 2
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": lease_s, "retryLimit": 5})
            await push(queen, q, [{"transactionId": f"{q}-x", "data": {"x": 1}}])

            first = await collect(queen, q, expected=1, ack=False)
            assert len(first) == 1, first
            check_message_shape(first[0])
            # While leased, nobody else gets it.
            assert await pop_builder(queen, q, wait=False).pop() == [], "a leased message was handed out twice"

            await asyncio.sleep(lease_s + 1.0)
            again = await collect(queen, q, expected=1, ack=False, deadline_s=10)
            assert len(again) == 1, "an unacked message must be redelivered after its lease expires"
            assert again[0]["transactionId"] == f"{q}-x"
            assert again[0]["data"] == {"x": 1}
            res = await queen.ack(again[0], True)
            assert res.get("success") is True, res
            await assert_nothing_delivered(queen, q, why="acked after redelivery")

    run(scenario())


def test_lease_renew_keeps_message_leased(baton_url: str) -> None:
    """queen.renew(msg) -> POST /api/v1/lease/{leaseId}/extend (no body); a
    renewed message is not redelivered past its original lease time."""

    async def scenario() -> None:
        q = qname("renew")
        lease_s = 2
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": lease_s})
            await push(queen, q, [{"transactionId": f"{q}-r", "data": {"r": 1}}])
            [msg] = await collect(queen, q, expected=1, ack=False)

            for _ in range(4):  # 4 s in total, twice the lease time
                await asyncio.sleep(1.0)
                renewed = await queen.renew(msg)
                assert isinstance(renewed, dict) and renewed.get("success") is True, f"renew failed: {renewed!r}"
                assert renewed.get("leaseId") == msg["leaseId"]
            assert await pop_builder(queen, q, wait=False).pop() == [], "a renewed lease expired anyway"

            res = await queen.ack(msg, True)
            assert res.get("success") is True, res
            gone = await queen.renew(msg)
            assert gone.get("success") is False, f"renewing a released lease must report success=false: {gone!r}"

    run(scenario())


# ---------------------------------------------------------------------------
# (3) consumer groups
# ---------------------------------------------------------------------------


def test_consumer_groups_each_receive_every_message(baton_url: str) -> None:
    """Two groups each get all messages (in order); acking in one group does not
    consume them for the other group or for queue mode (no group)."""

    async def scenario() -> None:
        q = qname("groups")
        n = 12
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(n)])

            for group in ("g-one", "g-two"):
                got: List[Dict[str, Any]] = []

                async def handler(batch: Any, sink: List[Dict[str, Any]] = got) -> None:
                    sink.extend(as_list(batch))

                await consume_bounded(
                    queen.queue(q).group(group).batch(10).wait(True).timeout_millis(POLL_MS)
                    .limit(n).idle_millis(10_000),
                    handler,
                )
                assert [m["data"]["i"] for m in got] == list(range(n)), f"group {group} got {got!r}"
                for m in got:
                    check_message_shape(m)
                await assert_nothing_delivered(
                    queen, q, group=group, why=f"group {group} acked everything (acks carry consumerGroup)"
                )

            queue_mode = await collect(queen, q, expected=n)
            assert sorted(m["data"]["i"] for m in queue_mode) == list(range(n)), (
                "queue mode (no consumerGroup) is independent of the named groups"
            )

    run(scenario())


def test_subscription_mode_new_skips_existing_messages(baton_url: str) -> None:
    """A group that first registers with subscriptionMode=new does not see
    messages that existed before it registered, but sees later ones; a group
    without a subscription mode reads the whole history."""

    async def scenario() -> None:
        q = qname("submode")
        async with open_queen(baton_url) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-old-{i}", "data": {"old": i}} for i in range(5)])
            await asyncio.sleep(2.0)  # keep "before" and "after" well apart in time

            first = await pop_builder(queen, q, group="g-new", subscription_mode="new", wait=False).pop()
            assert first == [], f"subscriptionMode=new delivered history: {[m.get('data') for m in first]}"

            history = await collect(queen, q, expected=5, group="g-all")
            assert sorted(m["data"]["old"] for m in history) == list(range(5)), history

            await asyncio.sleep(1.0)
            await push(queen, q, [{"transactionId": f"{q}-new-{i}", "data": {"new": i}} for i in range(3)])

            fresh = await collect(queen, q, expected=3, group="g-new", subscription_mode="new")
            assert [m["data"] for m in fresh] == [{"new": 0}, {"new": 1}, {"new": 2}], (
                f"subscriptionMode=new group got {[m.get('data') for m in fresh]}"
            )
            await assert_nothing_delivered(queen, q, group="g-new", why="history stays skipped for g-new")

            later = await collect(queen, q, expected=3, group="g-all")
            assert [m["data"] for m in later] == [{"new": 0}, {"new": 1}, {"new": 2}], later

    run(scenario())


def test_subscription_mode_applies_per_group_and_queue(baton_url: str) -> None:
    """Issue 16 item 1: the mode applies per (group, queue), from the group's first pop on
    that queue. A group that already reads queue A and first pops queue B with
    subscriptionMode=new skips B's backlog; a group made with `new` on A that first pops
    queue C without a mode reads C's whole history (both were decided by the group's first
    pop anywhere)."""

    async def scenario() -> None:
        a, b, c = qname("subA"), qname("subB"), qname("subC")
        async with open_queen(baton_url) as queen:
            for q in (a, b, c):
                await configure(queen, q)
            await push(queen, a, [{"transactionId": f"{a}-0", "data": {"a": 0}}])
            got = await collect(queen, a, expected=1, group="g-per")
            assert [m["data"] for m in got] == [{"a": 0}]
            await push(queen, b, [{"transactionId": f"{b}-old-{i}", "data": {"old": i}} for i in range(3)])
            await push(queen, c, [{"transactionId": f"{c}-old-{i}", "data": {"old": i}} for i in range(3)])
            await asyncio.sleep(1.5)

            first = await pop_builder(queen, b, group="g-per", subscription_mode="new", wait=False).pop()
            assert first == [], f"B's backlog reached a group new to B: {[m.get('data') for m in first]}"
            await asyncio.sleep(0.5)
            await push(queen, b, [{"transactionId": f"{b}-new-{i}", "data": {"new": i}} for i in range(2)])
            fresh = await collect(queen, b, expected=2, group="g-per", subscription_mode="new")
            assert [m["data"] for m in fresh] == [{"new": 0}, {"new": 1}], [m.get("data") for m in fresh]
            await assert_nothing_delivered(queen, b, group="g-per", why="B's backlog stays skipped")

            made_new = await pop_builder(queen, a, group="g-made-new", subscription_mode="new", wait=False).pop()
            assert made_new == []
            history = await collect(queen, c, expected=3, group="g-made-new")
            assert sorted(m["data"]["old"] for m in history) == [0, 1, 2], "C's history, asked for with no mode"

    run(scenario())


# ---------------------------------------------------------------------------
# (4) DLQ
# ---------------------------------------------------------------------------


def test_failed_message_goes_to_dlq_after_retry_limit(baton_url: str) -> None:
    """retryLimit=2 + dlqAfterMaxRetries: nacking (ack status 'failed') every
    delivery moves the message to the DLQ after at most retryLimit+1
    deliveries; queue(q).dlq().get() (GET /api/v1/dlq) then lists it with its
    payload and last error, and it is never delivered again."""

    async def scenario() -> None:
        q = qname("dlq")
        retry_limit = 2
        tx = f"{q}-poison"
        payload = {"poison": True, "n": 7}
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"leaseTime": 10, "retryLimit": retry_limit, "dlqAfterMaxRetries": True})
            await push(queen, q, [{"transactionId": tx, "data": payload}], partition="poison")

            attempts = 0
            entry: Optional[Dict[str, Any]] = None
            dlq: Dict[str, Any] = {}
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline and entry is None:
                msgs = await pop_builder(queen, q, batch=1, wait=True, timeout_ms=POLL_MS).pop()
                for m in msgs:
                    attempts += 1
                    assert m["transactionId"] == tx and m["data"] == payload, m
                    assert attempts <= retry_limit + 1, (
                        f"delivered {attempts} times with retryLimit={retry_limit}; never dead-lettered"
                    )
                    res = await queen.ack(m, False, {"error": f"boom-{attempts}"})
                    assert res.get("success") is True, f"nack refused: {res!r}"
                if not msgs:
                    dlq = await queen.queue(q).dlq().limit(10).get()
                    entry = next((d for d in dlq.get("messages") or [] if d.get("transactionId") == tx), None)

            assert entry is not None, f"message never reached the DLQ (attempts={attempts}, last dlq={dlq!r})"
            assert attempts >= retry_limit, f"only {attempts} deliveries before DLQ with retryLimit={retry_limit}"
            assert dlq.get("total", 0) >= 1, dlq
            assert entry.get("data") == payload, f"DLQ entry must carry the payload as 'data': {entry!r}"
            assert "boom" in str(entry.get("errorMessage") or ""), f"DLQ entry must carry the last error: {entry!r}"

            await assert_nothing_delivered(queen, q, why="a dead-lettered message is not delivered again")

            # Filters the client sends: partition (from the builder) and consumerGroup.
            by_partition = await queen.queue(q).partition("poison").dlq().get()
            assert any(d.get("transactionId") == tx for d in by_partition.get("messages") or []), by_partition
            other = await queen.queue(q).partition("elsewhere").dlq().get()
            assert not any(d.get("transactionId") == tx for d in other.get("messages") or []), other

    run(scenario())


def test_ack_with_dlq_status_dead_letters_immediately(baton_url: str) -> None:
    """queen.ack(msg, 'dlq') (documented in the client README) moves the message
    to the DLQ at once, regardless of retryLimit."""

    async def scenario() -> None:
        q = qname("dlqnow")
        tx = f"{q}-bad"
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"retryLimit": 5, "dlqAfterMaxRetries": True})
            await push(queen, q, [{"transactionId": tx, "data": {"bad": 1}}])
            [msg] = await collect(queen, q, expected=1, ack=False)
            res = await queen.ack(msg, "dlq", {"error": "unprocessable"})
            assert res.get("success") is True, res
            await assert_nothing_delivered(queen, q, why="dead-lettered by ack status 'dlq'")

            entry = None
            deadline = time.monotonic() + 10
            while entry is None and time.monotonic() < deadline:
                dlq = await queen.queue(q).dlq().get()
                entry = next((d for d in dlq.get("messages") or [] if d.get("transactionId") == tx), None)
                if entry is None:
                    await asyncio.sleep(0.2)
            assert entry is not None, "ack status 'dlq' did not dead-letter the message"
            assert entry.get("data") == {"bad": 1}, entry

    run(scenario())


# ---------------------------------------------------------------------------
# (5) transactions
# ---------------------------------------------------------------------------


def test_transaction_acks_input_and_pushes_output(baton_url: str) -> None:
    """pop from A, then transaction().ack(msg).queue(B).push([...]).commit():
    the output is delivered from B and the input is gone from A for good."""

    async def scenario() -> None:
        qa, qb = qname("txin"), qname("txout")
        lease_s = 2
        async with open_queen(baton_url) as queen:
            await configure(queen, qa, {"leaseTime": lease_s})
            await configure(queen, qb)
            await push(queen, qa, [{"transactionId": f"{qa}-in", "data": {"n": 21}}])

            [msg] = await collect(queen, qa, expected=1, ack=False)
            check_message_shape(msg)
            out_tx = f"{qb}-out"
            result = await (
                queen.transaction()
                .ack(msg)
                .queue(qb)
                .push([{"transactionId": out_tx, "data": {"n": msg["data"]["n"] * 2}}])
                .commit()
            )
            assert result, f"commit returned a falsy result: {result!r}"
            assert result.get("success") is True, result

            [out] = await collect(queen, qb, expected=1)
            assert out["transactionId"] == out_tx
            assert out["data"] == {"n": 42}
            assert out.get("partition") == "Default", f"transaction push without partition -> 'Default': {out!r}"

            await asyncio.sleep(lease_s + 1.5)
            await assert_nothing_delivered(queen, qa, why="the input was acked inside the committed transaction")

    run(scenario())


def test_transaction_with_expired_lease_is_refused_whole(baton_url: str) -> None:
    """A bundle whose ack carries a lease that expired (and whose message was
    re-leased to someone else) is rolled back: commit() raises and the bundle's
    push is not applied."""

    async def scenario() -> None:
        qa, qb = qname("fence-in"), qname("fence-out")
        lease_s = 2
        async with open_queen(baton_url) as queen:
            await configure(queen, qa, {"leaseTime": lease_s, "retryLimit": 5})
            await configure(queen, qb)
            await push(queen, qa, [{"transactionId": f"{qa}-m", "data": {"m": 1}}])

            [stale] = await collect(queen, qa, expected=1, ack=False)
            await asyncio.sleep(lease_s + 1.0)
            [fresh] = await collect(queen, qa, expected=1, ack=False, deadline_s=10)
            assert fresh["transactionId"] == stale["transactionId"]
            assert fresh["leaseId"] != stale["leaseId"], "a redelivery must carry a new leaseId"

            with pytest.raises(Exception):
                await queen.transaction().ack(stale).queue(qb).push([{"data": {"never": True}}]).commit()
            # The current holder's lease is untouched by the refused bundle.
            ok = await queen.transaction().ack(fresh).commit()
            assert ok.get("success") is True, ok

            await assert_nothing_delivered(queen, qb, why="the refused transaction's push must not be applied")
            await assert_nothing_delivered(queen, qa, why="the message was acked by the holder of the fresh lease")

    run(scenario())
