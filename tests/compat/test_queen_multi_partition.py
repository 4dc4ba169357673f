"""Queen's multi-partition pop (`pop().partitions(N)`, issue 16 item 2, D60) through the
real queen-mq client against a real `baton serve`: one pop takes from up to N partitions,
sharing the batch budget; every message carries its own partition's lease, so acks and
renewals by message work; a partition is never in two answers while leased.
"""

from __future__ import annotations

import asyncio

from conftest import open_queen

TIMEOUT_S = 60


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


def test_one_pop_takes_from_several_partitions(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            for p in range(5):
                await queen.queue("wide").partition(f"p{p}").push([{"data": {"p": p, "i": i}} for i in range(2)])

            got = await queen.queue("wide").batch(10).partitions(3).wait(False).pop()
            parts = {m["partition"] for m in got}
            assert len(parts) == 3 and len(got) == 6, [(m["partition"], m["data"]) for m in got]
            assert len({m["leaseId"] for m in got}) == 3, "one lease per partition"

            # The budget is shared: batch 3 over up to 3 partitions is 3 messages at most, and
            # none from a partition the first pop still holds.
            rest = await queen.queue("wide").batch(3).partitions(3).wait(False).pop()
            assert len(rest) == 3 and not ({m["partition"] for m in rest} & parts), rest

            renewed = await queen.renew(got)
            assert isinstance(renewed, list) and len(renewed) == 3, renewed
            assert all(r.get("success") for r in renewed), renewed
            await queen.ack(got, True)
            await queen.ack(rest, True)
            left = await queen.queue("wide").batch(10).partitions(5).wait(False).pop()
            done = {(m["data"]["p"], m["data"]["i"]) for m in got + rest + left}
            assert done == {(p, i) for p in range(5) for i in range(2)}, sorted(done)
            assert len(got) + len(rest) + len(left) == 10, "a message came twice"

    run(scenario())
