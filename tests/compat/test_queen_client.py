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
import contextlib
import signal
import time
import uuid
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional

import pytest
from queen import Queen  # noqa: F401  (the client under test)

from conftest import open_queen

SCENARIO_TIMEOUT_S = 90.0
POLL_MS = 1000  # long-poll timeout used by the tests' pops and consumers


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def run(coro: Awaitable[Any], timeout_s: float = SCENARIO_TIMEOUT_S) -> Any:
    """Run one scenario on a fresh event loop, bounded in time."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout_s)

    return asyncio.run(bounded())


def qname(tag: str) -> str:
    return f"compat-{tag}-{uuid.uuid4().hex[:8]}"


def as_list(msg_or_msgs: Any) -> List[Dict[str, Any]]:
    return list(msg_or_msgs) if isinstance(msg_or_msgs, list) else [msg_or_msgs]


def group_ctx(group: Optional[str]) -> Optional[Dict[str, str]]:
    return {"group": group} if group else None


async def configure(queen: Queen, queue: str, options: Optional[Dict[str, Any]] = None) -> None:
    builder = queen.queue(queue)
    if options is not None:
        builder = builder.config(options)
    res = await builder.create()
    assert isinstance(res, dict), f"configure {queue}: expected a JSON object, got {res!r}"
    assert res.get("configured") is True, f"configure {queue}: expected configured=true, got {res!r}"


async def push(queen: Queen, queue: str, items: List[Dict[str, Any]], partition: Optional[str] = None) -> List[Any]:
    builder = queen.queue(queue)
    if partition is not None:
        builder = builder.partition(partition)
    results = await builder.push(items)
    assert isinstance(results, list), f"push to {queue}: expected a JSON array of per-item results, got {results!r}"
    assert len(results) == len(items), f"push to {queue}: {len(results)} results for {len(items)} items: {results!r}"
    statuses = [r.get("status") if isinstance(r, dict) else r for r in results]
    assert statuses == ["queued"] * len(items), f"push to {queue}: statuses {statuses}"
    return results


def pop_builder(
    queen: Queen,
    queue: str,
    *,
    group: Optional[str] = None,
    partition: Optional[str] = None,
    subscription_mode: Optional[str] = None,
    batch: int = 10,
    wait: bool = True,
    timeout_ms: int = POLL_MS,
):
    builder = queen.queue(queue)
    if partition is not None:
        builder = builder.partition(partition)
    if group is not None:
        builder = builder.group(group)
    if subscription_mode is not None:
        builder = builder.subscription_mode(subscription_mode)
    return builder.batch(batch).wait(wait).timeout_millis(timeout_ms)


async def collect(
    queen: Queen,
    queue: str,
    expected: int,
    *,
    group: Optional[str] = None,
    partition: Optional[str] = None,
    subscription_mode: Optional[str] = None,
    batch: int = 10,
    deadline_s: float = 20.0,
    ack: bool = True,
) -> List[Dict[str, Any]]:
    """Long-poll pops until `expected` messages arrived or the deadline passed,
    acking each batch (completed) when `ack`."""
    out: List[Dict[str, Any]] = []
    deadline = time.monotonic() + deadline_s
    while len(out) < expected and time.monotonic() < deadline:
        msgs = await pop_builder(
            queen, queue, group=group, partition=partition, subscription_mode=subscription_mode, batch=batch
        ).pop()
        if not msgs:
            continue
        if ack:
            res = await queen.ack(msgs, True, group_ctx(group))
            assert res.get("success") is True, f"batch ack on {queue} (group={group}) failed: {res!r}"
        out.extend(msgs)
    return out


async def assert_nothing_delivered(
    queen: Queen,
    queue: str,
    *,
    group: Optional[str] = None,
    why: str,
    timeout_ms: int = 1500,
) -> None:
    msgs = await pop_builder(queen, queue, group=group, batch=10, wait=True, timeout_ms=timeout_ms).pop()
    assert msgs == [], f"{why}: unexpected delivery from {queue} (group={group}): " + repr(
        [(m.get("transactionId"), m.get("data")) for m in msgs]
    )


async def consume_bounded(builder, handler: Callable[[Any], Awaitable[Any]], timeout_s: float = 45.0) -> None:
    """consume() until its limit / idle_millis stops it, bounded by `timeout_s`."""
    await asyncio.wait_for(builder.consume(handler), timeout_s)


def check_message_shape(msg: Dict[str, Any], *, leased: bool = True) -> None:
    assert isinstance(msg, dict), msg
    assert msg.get("transactionId"), f"message without transactionId: {msg!r}"
    assert msg.get("partitionId"), f"message without partitionId (the client cannot ack it): {msg!r}"
    assert "data" in msg, f"message payload must be under 'data': {msg!r}"
    if leased:
        assert msg.get("leaseId"), f"leased delivery without leaseId: {msg!r}"


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
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            first = await collect(queen, q, expected=3, group="g-seek")
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
    /metrics/prometheus (tests/http_semantics.rs checks both)."""

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
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            first = await collect(queen, q, expected=3, group="g-before")
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
