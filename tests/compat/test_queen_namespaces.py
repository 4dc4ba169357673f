"""Queen's namespaces and tasks (issue 16 item 2, D57) through the real queen-mq client
against a real `baton serve`: `queue(q).namespace(n).task(t).create()` tags a queue; a
pop or consume by namespace or task takes from every queue so tagged and from no other;
a long poll by namespace wakes on a push to any of its queues; `get_namespaces`,
`get_tasks` and `list_queues(namespace=)` read the tags.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from conftest import open_queen

TIMEOUT_S = 60


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


def test_pop_and_consume_by_namespace_and_task(baton_url: str) -> None:
    ns, other = f"ns-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"

    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            await queen.queue("ns-a").namespace(ns).task("invoice").create()
            await queen.queue("ns-b").namespace(ns).task("refund").create()
            await queen.queue("ns-c").namespace(other).task("invoice").create()
            for q in ("ns-a", "ns-b", "ns-c"):
                await queen.queue(q).push([{"transactionId": f"{q}-{i}", "data": {"q": q, "i": i}} for i in range(3)])

            # Every message of the namespace, from both its queues, and none of the other's.
            seen = []
            for _ in range(10):
                got = await queen.queue().namespace(ns).batch(4).wait(False).pop()
                if not got:
                    break
                seen += [(m["data"]["q"], m["data"]["i"]) for m in got]
                await queen.ack(got, True)
            assert sorted(seen) == [(q, i) for q in ("ns-a", "ns-b") for i in range(3)], seen

            # By task: "invoice" is ns-c's (ns-a's were taken above).
            got = await queen.queue().task("invoice").batch(10).wait(False).pop()
            assert sorted(m["data"]["q"] for m in got) == ["ns-c"] * 3, got
            await queen.ack(got, True)

            # A long poll by namespace wakes on a push to any of its queues.
            async def later() -> None:
                await asyncio.sleep(0.3)
                await queen.queue("ns-b").push([{"transactionId": "late", "data": {"q": "ns-b", "i": 99}}])

            t = time.monotonic()
            pusher = asyncio.ensure_future(later())
            got = await queen.queue().namespace(ns).batch(1).wait(True).timeout_millis(10_000).pop()
            await pusher
            assert [m["data"]["i"] for m in got] == [99], got
            assert time.monotonic() - t < 5

            # consume() by namespace: the handler gets each message once, auto-acked.
            await queen.queue("ns-a").push([{"transactionId": f"c-{i}", "data": {"q": "ns-a", "i": 10 + i}} for i in range(2)])
            handled = []

            async def handle(m) -> None:
                handled.append(m["data"]["i"])

            await asyncio.wait_for(
                queen.queue().namespace(ns).batch(1).limit(2).wait(True).timeout_millis(2000).consume(handle), 30
            )
            assert sorted(handled) == [10, 11], handled
            assert await queen.queue().namespace(ns).batch(10).wait(False).pop() == []

            names = await queen.admin.get_namespaces()
            mine = {n["namespace"]: sorted(n["queues"]) for n in names["namespaces"]}
            assert mine[ns] == ["ns-a", "ns-b"] and mine[other] == ["ns-c"], names
            tasks = await queen.admin.get_tasks()
            assert {t["task"]: sorted(t["queues"]) for t in tasks["tasks"]}["invoice"] == ["ns-a", "ns-c"], tasks
            listed = await queen.admin.list_queues(namespace=ns)
            assert sorted(q["name"] for q in listed["queues"]) == ["ns-a", "ns-b"], listed
            assert all(q["namespace"] == ns for q in listed["queues"]), listed

            # A deleted queue leaves its namespace.
            await queen.queue("ns-b").delete()
            names = await queen.admin.get_namespaces()
            assert {n["namespace"]: n["queues"] for n in names["namespaces"]}[ns] == ["ns-a"], names

    run(scenario())


def test_a_namespace_pop_takes_several_partitions_and_conflates(baton_url: str) -> None:
    """`partitions(N)` and `conflation()` on a pop by namespace (issue 16): N partitions of
    the queue that answers, one lease each; a conflating group gets each partition's newest
    message only, the rest retired, the echo on empty pops too; the policy it registered
    holds for that group on a later pop that does not declare it, and no other group is
    touched. A namespace pop declaring conflation without a group is refused."""
    ns = f"nsw-{uuid.uuid4().hex[:6]}"
    wide_q, cmd_q = f"{ns}-wide", f"{ns}-cmd"

    async def scenario() -> None:
        async with open_queen(baton_url) as queen:
            await queen.queue(wide_q).namespace(ns).create()
            for p in range(4):
                await queen.queue(wide_q).partition(f"p{p}").push([{"data": {"p": p, "i": i}} for i in range(2)])
            got = await queen.queue().namespace(ns).batch(10).partitions(3).wait(False).pop()
            assert len({m["partition"] for m in got}) == 3 and len(got) == 6, [(m["partition"], m["data"]) for m in got]
            assert len({m["leaseId"] for m in got}) == 3, "one lease per partition"
            await queen.ack(got, True)
            rest = await queen.queue().namespace(ns).batch(10).partitions(3).wait(False).pop()
            assert len(rest) == 2, rest
            await queen.ack(rest, True)
            await queen.queue(wide_q).delete()

            await queen.queue(cmd_q).namespace(ns).create()
            for p in range(2):
                await queen.queue(cmd_q).partition(f"e{p}").push([{"data": {"e": p, "v": v}} for v in range(4)])
            newest = []
            for _ in range(4):
                got = await queen.queue().namespace(ns).group("cg").conflation().batch(10).wait(False).pop()
                if not got:
                    break
                newest += [(m["data"]["e"], m["data"]["v"]) for m in got]
                await queen.ack(got, True, {"group": "cg"})
            assert sorted(newest) == [(0, 3), (1, 3)], newest
            # Declared once, the policy holds for the group without the flag.
            await queen.queue(cmd_q).partition("e0").push([{"data": {"e": 0, "v": v}} for v in range(4, 7)])
            got = await queen.queue().namespace(ns).group("cg").batch(10).wait(False).pop()
            assert [(m["data"]["e"], m["data"]["v"]) for m in got] == [(0, 6)], got
            await queen.ack(got, True, {"group": "cg"})
            empty = await queen.queue().namespace(ns).group("cg").conflation().batch(10).wait(False).pop()
            assert empty == [], empty
            # Another group reads every message.
            other = []
            for _ in range(10):
                got = await queen.queue().namespace(ns).group("all").batch(20).wait(False).pop()
                if not got:
                    break
                other += got
                await queen.ack(got, True, {"group": "all"})
            assert len(other) == 11, [(m["data"]) for m in other]
            with pytest.raises(Exception) as refused:
                await queen.queue().namespace(ns).conflation().batch(1).wait(False).pop()
            assert "consumerGroup" in str(refused.value) or "conflation" in str(refused.value), repr(refused.value)

    run(scenario())
