"""The record of IDs received, which refuses a server that repeats them."""

from __future__ import annotations

import json

import pytest

from snowdrift_client import Client, Unavailable
from snowdrift_client._guard import MAX_ENTRIES, Guard

from conftest import Server, settings
from fake import Fake, http_answer

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
