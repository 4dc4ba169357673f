"""Queen's conflation (`pop().conflation()`, issue 16 item 2, D61) through the real
queen-mq client against a real `baton serve`: a conflating group's pop of a partition
delivers only the newest message and retires the rest; the policy belongs to the (group,
queue) once declared, so a consumer of that group that does not declare it still
conflates; another group is untouched; the depth report says so; queue mode and autoAck
are refused.
"""

from __future__ import annotations

import asyncio

import pytest

from conftest import open_queen

TIMEOUT_S = 60


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


def test_a_conflating_group_gets_the_newest_message_of_each_partition(baton_url: str) -> None:
    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            for p in range(3):
                await queen.queue("cmd").partition(f"e{p}").push([{"data": {"e": p, "v": v}} for v in range(5)])

            seen = []
            for _ in range(6):
                got = await queen.queue("cmd").group("g").conflation().batch(10).wait(False).pop()
                if not got:
                    break
                assert len(got) == 1, got
                seen.append((got[0]["data"]["e"], got[0]["data"]["v"]))
                await queen.ack(got, True, {"group": "g"})
            assert sorted(seen) == [(0, 4), (1, 4), (2, 4)], seen
            depth = await queen.admin.get_queue_depth("cmd", group="g")
            assert depth["conflation"] is True and depth["pending"] == 0, depth

            # The stored policy wins for a consumer of g that does not declare it.
            await queen.queue("cmd").partition("e0").push([{"data": {"e": 0, "v": v}} for v in range(5, 8)])
            depth = await queen.admin.get_queue_depth("cmd", group="g")
            assert (depth["pending"], depth["effectivePending"]) == (3, 1), depth
            got = await queen.queue("cmd").group("g").batch(10).wait(False).pop()
            assert [m["data"]["v"] for m in got] == [7], got
            await queen.ack(got, True, {"group": "g"})

            # Another group reads every message.
            other = await queen.queue("cmd").group("h").partition("e0").batch(100).wait(False).pop()
            assert [m["data"]["v"] for m in other] == list(range(8)), other

            # Queue mode cannot conflate: a 400 the client raises.
            with pytest.raises(Exception):
                await queen.queue("cmd").conflation().batch(1).wait(False).pop()

    run(scenario())
