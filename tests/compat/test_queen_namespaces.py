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
