"""AsyncClient on a real server: the same cache as coroutines, the loop never blocked."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import List

import pytest

from snowdrift_client import (
    AsyncClient,
    BadRequest,
    ClientClosed,
    Unauthorized,
    Unavailable,
    UnknownName,
)

from conftest import TSO, Server, settings
from fake import Fake, http_answer


def test_tasks_share_one_cache_and_never_get_one_id_twice(server: Server) -> None:
    async def main() -> List[List[int]]:
        async with AsyncClient([server.url], **settings(batch_min=50, batch_max=500)) as client:

            async def draw() -> List[int]:
                out = []
                for k in range(5000):
                    out.append(await client.next("order"))
                    if k % 10 == 0:
                        await asyncio.sleep(0)
                out.extend(await client.next_n("order", 100))
                return out

            got = await asyncio.gather(*(draw() for _ in range(8)))
            s = client.stats("order")
            assert s is not None and s.served == 8 * 5100
            return list(got)

    got = asyncio.run(main())
    every = [i for ids in got for i in ids]
    assert len(every) == len(set(every)) == 8 * 5100
    for ids in got:
        assert all(a < b for a, b in zip(ids, ids[1:]))


def test_text_named_tso_and_errors(server: Server) -> None:
    async def main() -> None:
        async with AsyncClient([server.url], **settings()) as client:
            texts = [await client.next_text("u7") for _ in range(20)]
            assert len(set(texts)) == 20 and all(uuid.UUID(t).version == 7 for t in texts)
            named = await client.next_named("u5", "python.org")
            assert named == str(uuid.uuid5(uuid.NAMESPACE_DNS, "python.org"))
            ts = [await client.next(TSO) for _ in range(5)]
            assert all(a < b for a, b in zip(ts, ts[1:]))
            with pytest.raises(UnknownName):
                await client.next("no-such-name")
            with pytest.raises(BadRequest):
                await client.next_n("order", 0)
            assert client.endpoints()[0].healthy
        with pytest.raises(ClientClosed):
            await client.next("order")
        async with AsyncClient([server.url], token="sd_wrong") as client:
            with pytest.raises(Unauthorized):
                await client.next("order")

    asyncio.run(main())


def test_a_fetch_does_not_block_the_event_loop() -> None:
    body = json.dumps(
        {"name": "order", "kind": "segment", "runs": [{"first": "1", "count": 100, "stride": 1}]}
    ).encode()
    slow = Fake(http_answer(body), stall=0.5)

    async def main() -> int:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        async with AsyncClient([slow.url], health_interval=0, batch_min=100) as client:
            t = asyncio.ensure_future(ticker())
            assert await client.next("order") == 1
            done.set()
            await t
            assert await client.next("order") == 2
        return ticks

    try:
        # Half a second of fetch: a loop that was free ticked many times meanwhile.
        assert asyncio.run(main()) >= 10
    finally:
        slow.close()


def test_the_deadline_bounds_a_dripped_body_off_the_loop_too() -> None:
    body = json.dumps(
        {"name": "order", "kind": "segment", "runs": [{"first": "1", "count": 100, "stride": 1}]}
    ).encode()
    answer = http_answer(body)
    drip = Fake(answer, drip=0.05, drip_after=answer.index(b"\r\n\r\n") + 4)

    async def main() -> float:
        async with AsyncClient([drip.url], health_interval=0, deadline=0.5, attempts=2, backoff=(0.02, 0.2)) as client:
            start = time.monotonic()
            with pytest.raises(Unavailable, match="deadline"):
                await client.next("order")
            return time.monotonic() - start

    try:
        took = asyncio.run(main())
        assert took < 2 * 0.5 + 0.5 + 0.5, f"two tries of 0.5 s took {took:.1f} s"
    finally:
        drip.close()
