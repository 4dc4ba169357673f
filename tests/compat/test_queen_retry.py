"""Queen's `admin.retry_message(partitionId, transactionId)` (issue 16 item 2, D66) through
the real queen-mq client against a real `baton serve`: a dead-lettered message goes back
to the group that dead-lettered it, once, and leaves the DLQ; a long poll of that group
wakes for it; nothing the group had finished comes back; another group is untouched;
what cannot be retried is refused with its code.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import open_queen
from queen_helpers import assert_nothing_delivered, collect, configure, pop_builder, push, qname, run


def test_retry_message_gives_a_dead_letter_back_to_its_group(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("retry")
        async with open_queen(baton_url) as queen:
            await configure(queen, q, {"retryLimit": 5, "dlqAfterMaxRetries": True})
            await push(queen, q, [{"transactionId": f"{q}-{i}", "data": {"i": i}} for i in range(3)])
            msgs = await collect(queen, q, expected=3, group="g", ack=False)
            assert [m["data"]["i"] for m in msgs] == [0, 1, 2], msgs
            ctx = {"group": "g"}
            for m, status in zip(msgs, [True, "dlq", True]):
                res = await queen.ack(m, status, ctx)
                assert res.get("success") is True, res
            assert len(await collect(queen, q, expected=3, group="h")) == 3
            await assert_nothing_delivered(queen, q, group="g", why="all settled, one dead-lettered")
            pid = msgs[1]["partitionId"]
            dlq = await queen.queue(q).dlq("g").get()
            assert [d.get("transactionId") for d in dlq.get("messages") or []] == [f"{q}-1"], dlq

            # A long poll of g is waiting when the retry lands: it is woken with the message.
            started = time.monotonic()
            waiting = asyncio.create_task(pop_builder(queen, q, group="g", timeout_ms=20_000).pop())
            await asyncio.sleep(0.5)
            res = await queen.admin.retry_message(pid, f"{q}-1")
            assert res.get("success") is True and res.get("consumerGroups") == ["g"], res
            got = await waiting
            assert [m["transactionId"] for m in got] == [f"{q}-1"], got
            assert time.monotonic() - started < 10, "the long poll was not woken by the retry"
            assert got[0]["data"] == {"i": 1}
            assert (await queen.ack(got[0], True, ctx)).get("success") is True

            dlq = await queen.queue(q).dlq("g").get()
            assert not dlq.get("messages"), f"the retried message is still in the DLQ: {dlq}"
            await assert_nothing_delivered(queen, q, group="g", why="only the retried message comes back, once")
            await assert_nothing_delivered(queen, q, group="h", why="another group is untouched")

            with pytest.raises(Exception) as again:
                await queen.admin.retry_message(pid, f"{q}-1")
            assert "dead-letter" in str(again.value), repr(again.value)

    run(scenario())


def test_retry_message_refuses_what_it_cannot_retry(baton_url: str) -> None:
    async def scenario() -> None:
        q = qname("retrybad")
        async with open_queen(baton_url, retry_attempts=1) as queen:
            await configure(queen, q)
            await push(queen, q, [{"transactionId": f"{q}-0", "data": {"i": 0}}])
            [m] = await collect(queen, q, expected=1, group="g")
            pid = m["partitionId"]
            for args, words in [
                (("not-a-partition", f"{q}-0"), "not a Baton partition id"),
                ((pid, "nobody-pushed-this"), "no such message"),
                ((pid, f"{q}-0"), "dead-letter"),
            ]:
                with pytest.raises(Exception) as refused:
                    await queen.admin.retry_message(*args)
                assert words in str(refused.value), (args, repr(refused.value))
            await assert_nothing_delivered(queen, q, group="g", why="a refused retry changes nothing")

    run(scenario())
