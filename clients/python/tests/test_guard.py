"""The record of IDs received, which refuses a server that repeats them."""

from __future__ import annotations

import asyncio
import json

import pytest

from snowdrift_client import AsyncClient, Client, Unavailable
from snowdrift_client._guard import MAX_ENTRIES, MAX_TEXTS, Guard, TextGuard

from conftest import Server, settings
from fake import TEXT_KIND, Fake, http_answer

FAKE = 10**15


def test_a_repeat_is_refused_in_any_progression() -> None:
    g = Guard()
    assert g.admit([(1, 100, 1)]) is None
    assert g.admit([(101, 100, 1)]) is None, "the next run of one server"
    assert g._entries == 1, "adjacent runs merge"
    refused = g.admit([(150, 10, 1)])
    assert refused is not None and "IDs 150..=159" in refused and "IDs 1..=200" in refused
    # Striped: odd and even IDs are different progressions that never meet.
    assert g.admit([(1001, 50, 2)]) is None
    assert g.admit([(1002, 50, 2)]) is None
    assert g.admit([(1051, 1, 1)]) is not None, "a single ID inside the odd run"
    assert g.admit([(1052, 1, 1)]) is not None, "a single ID inside the even run"
    # A stride of 3 meets the odd run at 1003, 1009, ...
    assert g.admit([(1000, 10, 3)]) is not None
    # Beyond everything: new.
    assert g.admit([(5000, 1, 1), (6000, 10, 7)]) is None


def test_a_repeat_past_many_ranges_of_another_progression_is_refused() -> None:
    # 100 disjoint single IDs 0, 10, ..., 990. The run 5, 700 meets the 70 from 10 to 700 and
    # shares only the last of them: every range it meets is checked, not the first few.
    g = Guard()
    for k in range(100):
        assert g.admit([(k * 10, 1, 1)]) is None
    assert g._entries == 100
    refused = g.admit([(5, 2, 695)])
    assert refused is not None and "ID 700" in refused, refused
    assert g.admit([(5, 2, 696)]) is None, "5 and 701: no multiple of 10"


def test_memory_is_bounded_and_the_lowest_are_forgotten() -> None:
    g = Guard()
    for k in range(MAX_ENTRIES + 10):
        assert g.admit([(k * 10, 5, 1)]) is None
    assert g._entries == MAX_ENTRIES
    assert g.admit([(0, 5, 1)]) is None, "forgotten: the oldest"
    assert g.admit([((MAX_ENTRIES + 9) * 10, 1, 1)]) is not None, "remembered: the newest"


def test_a_server_that_repeats_its_ids_is_refused(server: Server) -> None:
    body = json.dumps(
        {"name": "order", "kind": "segment", "runs": [{"first": str(FAKE), "count": 100, "stride": 1}]}
    ).encode()
    liar = Fake(http_answer(body))
    try:
        with Client([liar.url], **settings(batch_min=100, batch_max=100, attempts=2)) as client:
            first = client.next_n("order", 100)
            assert first == list(range(FAKE, FAKE + 100)), "the first batch is taken as it comes"
            with pytest.raises(Unavailable, match="already received"):
                client.next("order")
        with Client([liar.url, server.url], **settings(batch_min=100, batch_max=100)) as client:
            ids = [client.next("order") for _ in range(2000)]
            assert len(ids) == len(set(ids))
            assert sum(1 for i in ids if i >= FAKE) <= 100
            assert "already received" in (client.endpoints()[0].last_error or "")
    finally:
        liar.close()


def test_a_repeated_text_id_is_refused_and_memory_is_bounded() -> None:
    g = TextGuard()
    assert g.admit(["a", "b"]) is None
    assert g.admit(["c", "d"]) is None
    refused = g.admit(["e", "a"])
    assert refused is not None and "'a'" in refused and "already received" in refused
    assert g.admit(["e"]) is None, "a refused batch records nothing"
    assert g.admit(["e"]) is not None
    for k in range(0, MAX_TEXTS + 1000, 500):
        assert g.admit([f"id-{k + j}" for j in range(500)]) is None
    assert len(g) == MAX_TEXTS
    assert g.admit(["a"]) is None, "forgotten: the oldest"
    assert g.admit([f"id-{MAX_TEXTS + 900}"]) is not None, "remembered: the newest"


#: The same two UUIDs to every fetch, as the server of issue 40 (item 3) answered.
SAME_TWO = http_answer(
    json.dumps(
        {"name": "u7", "ids": ["0190dead-0000-7000-8000-000000000001", "0190dead-0000-7000-8000-000000000002"]}
    ).encode()
)


def test_a_server_that_repeats_text_ids_is_refused(server: Server) -> None:
    liar = Fake(SAME_TWO, runs_answer=TEXT_KIND)
    try:
        with Client([liar.url], **settings(batch_min=10, batch_max=10, attempts=2)) as client:
            first = [client.next_text("u7") for _ in range(2)]
            assert len(set(first)) == 2, "the first batch is taken as it comes"
            with pytest.raises(Unavailable, match="already received"):
                client.next_text("u7")
        with Client([liar.url, server.url], **settings(batch_min=100, batch_max=100)) as client:
            ids = [client.next_text("u7") for _ in range(400)]
            assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} repeats"
            assert sum(1 for i in ids if i.startswith("0190dead-")) <= 2
            assert liar.id_requests >= 2
            assert "already received" in (client.endpoints()[0].last_error or "")
            # uuid5 gives the same UUID for the same input, by design: never refused.
            assert client.next_named("u5", "a") == client.next_named("u5", "a")
    finally:
        liar.close()


def test_the_async_client_refuses_repeated_text_ids() -> None:
    liar = Fake(SAME_TWO, runs_answer=TEXT_KIND)

    async def main() -> None:
        async with AsyncClient([liar.url], **settings(batch_min=10, batch_max=10, attempts=2)) as client:
            first = [await client.next_text("u7") for _ in range(2)]
            assert len(set(first)) == 2
            with pytest.raises(Unavailable, match="already received"):
                await client.next_text("u7")

    try:
        asyncio.run(main())
    finally:
        liar.close()
