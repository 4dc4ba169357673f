"""Helpers for the Queen client compatibility tests (test_queen_client*.py and the
API tests): bounded scenarios, queue names, pushes, bounded pops and consumes."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Awaitable, Callable, Dict, List, Optional

from queen import Queen  # noqa: F401  (the client under test)


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


async def seed_and_take(queen: Queen, queue: str, n: int, group: str) -> List[Dict[str, Any]]:
    """Configure `queue`, push `n` messages {"i": 0..n-1} (transaction ids `<queue>-<i>`),
    and return them as `group` takes them (each acked), in order."""
    await configure(queen, queue)
    await push(queen, queue, [{"transactionId": f"{queue}-{i}", "data": {"i": i}} for i in range(n)])
    return await collect(queen, queue, expected=n, group=group)
