"""The client against a real ``snowdrift serve``: IDs, the cache, prefetch, batch sizing,
max_age, tso, threads and errors."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

import pytest

import snowdrift_client
from snowdrift_client import BadRequest, Client, ClientClosed, Unauthorized, UnknownName

from conftest import TOKEN, TSO, Server, settings


def wait_until(what: str, check: Callable[[], bool], within: float = 20.0) -> None:
    """A liveness bound, not a timing assertion."""
    give_up = time.monotonic() + within
    while not check():
        if time.monotonic() > give_up:
            raise AssertionError(f"not within {within} s: {what}")
        time.sleep(0.01)


def server_next(server: Server, name: str) -> int:
    status, body = server.get(f"/v1/ids/{name}")
    assert status == 200, body
    return int(json.loads(body)["ids"][0])


def test_ids_are_new_increasing_and_the_server_goes_on_after_the_cache(server: Server) -> None:
    with Client([server.url], **settings()) as client:
        ids = [client.next("order") for _ in range(1500)] + client.next_n("order", 2500)
        assert all(isinstance(i, int) for i in ids)
        assert all(a < b for a, b in zip(ids, ids[1:])), "one thread's segment IDs increase"
        stats = client.stats("order")
        assert stats is not None and stats.served == 4000
        # Everything the client held (handed out or cached) is below the server's next ID.
        cached = stats.cached
    after = server_next(server, "order")
    assert max(ids) + cached < after


@pytest.mark.parametrize("name", ["order", "flake"])
def test_threads_never_get_one_id_twice(server: Server, name: str) -> None:
    # Switch threads as often as the interpreter can, so a take that is not atomic shows:
    # next() beside next_n() on a segment tag, next() alone on a snowflake generator (whose
    # take reads the clock between reading and moving the cursor).
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with Client([server.url], **settings(batch_min=50, batch_max=500)) as client:
            got: List[List[int]] = [[] for _ in range(8)]
            barrier = threading.Barrier(8)

            def draw(k: int) -> None:
                barrier.wait()
                for j in range(10_000):
                    if name == "order" and j % 10 == 0:
                        got[k].extend(client.next_n(name, 7))
                    else:
                        got[k].append(client.next(name))

            threads = [threading.Thread(target=draw, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(old)
    every = [i for ids in got for i in ids]
    expected = 8 * (9_000 + 1_000 * 7) if name == "order" else 8 * 10_000
    assert len(every) == len(set(every)) == expected
    for ids in got:
        assert all(a < b for a, b in zip(ids, ids[1:])), "each thread's IDs increase"


def test_the_next_batch_is_fetched_in_the_background_at_prefetch_at(server: Server) -> None:
    with Client(
        [server.url], **settings(batch_min=1000, batch_max=1000, prefetch_at=0.5)
    ) as client:
        first = [client.next("order") for _ in range(500)]
        s = client.stats("order")
        assert s is not None and s.fetches == 1 and s.cached == 500
        client.next("order")  # the 501st: past half the batch
        wait_until("the prefetch lands", lambda: client.stats("order").fetches == 2)  # type: ignore[union-attr]
        s = client.stats("order")
        assert s is not None and s.cached == 499 + 1000, s
        rest = client.next_n("order", 1499)
        assert len(set(first + rest)) == 1999


def test_the_batch_follows_the_rate_within_bounds(server: Server) -> None:
    with Client(
        [server.url], **settings(batch_min=10, batch_max=5000, hold=1.0)
    ) as client:
        largest = 0
        for i in range(30_000):
            client.next("order")
            if i % 500 == 0:
                largest = max(largest, client.stats("order").batch)  # type: ignore[union-attr]
        s = client.stats("order")
        assert s is not None
        # Tens of thousands of IDs a second for a hold of 1 s: the batch grew to its bound
        # and never past it. (The last batch alone can be smaller: on a loaded machine a
        # stall of the process between two fetches lowers the rate seen.)
        assert largest == 5000 and s.batch <= 5000, (largest, s)
        assert s.fetches < 100, s
    with Client([server.url], **settings(batch_min=10, batch_max=5000, hold=1.0)) as client:
        for _ in range(5):
            client.next("order")
            time.sleep(0.2)
        s = client.stats("order")
        # Five IDs a second for a hold of 1 s: the batch stays at its floor.
        assert s is not None and s.batch == 10, s


def test_a_batch_above_max_count_is_several_requests(server: Server) -> None:
    before = server.requests("200")
    with Client(
        [server.url], **settings(batch_min=1000, batch_max=1000, max_count=100)
    ) as client:
        ids = client.next_n("order", 10)
        s = client.stats("order")
        assert s is not None and s.fetches == 1 and s.cached == 990, s
        assert ids == list(range(ids[0], ids[0] + 10))
    assert server.requests("200") - before == 10


def test_snowflake_ids_held_past_max_age_are_not_served(server: Server) -> None:
    with Client([server.url], **settings(max_age=1.0, batch_min=1000)) as client:
        first = client.next("flake")
        second = client.next("flake")
        s = client.stats("flake")
        assert s is not None and s.cached > 900 and s.wasted == 0
        time.sleep(1.5)
        late = client.next("flake")
        s = client.stats("flake")
        assert s is not None and s.wasted >= 998, s
    # Twitter layout: milliseconds above bit 22. The ID after the pause was made after it.
    assert (late >> 22) - (second >> 22) >= 1000, (first, second, late)
    with Client([server.url], **settings(max_age=30.0, batch_min=1000)) as client:
        a = client.next("flake")
        time.sleep(0.6)
        b = client.next("flake")
        s = client.stats("flake")
        # Within max_age the cache is used: same batch, nothing dropped.
        assert s is not None and s.fetches == 1 and s.wasted == 0 and b > a


def test_tso_ids_are_never_cached(server: Server) -> None:
    with Client([server.url], **settings()) as a, Client([server.url], **settings()) as b:
        seen: List[int] = []
        for _ in range(20):
            seen.append(a.next(TSO))
            seen.append(b.next(TSO))
            seen.extend(a.next_n(TSO, 3))
        assert all(x < y for x, y in zip(seen, seen[1:])), "tso IDs increase across clients"
        sa = a.stats(TSO)
        assert sa is not None and sa.cached == 0


def test_text_and_named_ids(server: Server) -> None:
    import uuid

    with Client([server.url], **settings(batch_min=20, batch_max=20)) as client:
        texts = [client.next_text("u7") for _ in range(50)]
        assert len(set(texts)) == 50
        assert all(uuid.UUID(t).version == 7 for t in texts)
        s = client.stats("u7")
        assert s is not None and s.fetches >= 3 and s.served == 50
        named = client.next_named("u5", "python.org")
        assert named == str(uuid.uuid5(uuid.NAMESPACE_DNS, "python.org"))
        assert client.next_named("u5", "python.org") == named
        with pytest.raises(BadRequest, match="use next_text"):
            client.next("u7")
        client.next("order")
        with pytest.raises(BadRequest, match="use next or next_n"):
            client.next_text("order")


def test_next_text_learns_the_kind_before_it_takes_text(server: Server) -> None:
    before = server.requests("409")
    with Client([server.url], **settings(batch_min=10, batch_max=10)) as client:
        # A 64-bit name: the first next_text asks for runs, which come back; no decimal text.
        with pytest.raises(BadRequest, match="'order' issues 64-bit IDs: use next or next_n"):
            client.next_text("order")
        s = client.stats("order")
        assert s is not None and s.fetches == 1 and s.cached == 10
        assert client.next("order") > 0
        # A text name: one refused request for runs (nothing issued), then text from then on.
        assert [client.next_text("u7") for _ in range(25)]
    assert server.requests("409") - before == 1


def test_a_text_name_asked_for_numbers_is_a_bad_request_from_the_server(server: Server) -> None:
    with Client([server.url], **settings()) as client:
        with pytest.raises(BadRequest, match="u7.*409.*form=runs") as e:
            client.next("u7")
        assert e.value.final


def test_final_errors_come_at_once_and_are_not_retried(server: Server) -> None:
    before = server.requests("404"), server.requests("401")
    with Client([server.url, server.url], **settings()) as client:
        with pytest.raises(UnknownName, match="'no-such-name'.*404"):
            client.next("no-such-name")
        with pytest.raises(UnknownName):
            client.next_n("no-such-name", 10)
    with Client([server.url], token="sd_wrong", deadline=2.0) as client:
        start = time.monotonic()
        for _ in range(3):
            with pytest.raises(Unauthorized, match="order.*401") as e:
                client.next("order")
            assert e.value.status == 401 and e.value.final
        assert time.monotonic() - start < 5.0
    with Client([server.url]) as client:
        with pytest.raises(Unauthorized):
            client.next("order")
    # One request per call: no retry, no storm.
    assert server.requests("404") - before[0] == 2
    assert server.requests("401") - before[1] == 4


def test_bad_arguments_and_settings_say_what_is_allowed(server: Server) -> None:
    cases: List[Tuple[Dict[str, Any], str]] = [
        (dict(endpoints=[]), "no endpoint"),
        (dict(endpoints="http://127.0.0.1:1"), "give a list of URLs"),
        (dict(endpoints=["127.0.0.1:8080"]), "http://HOST:PORT"),
        (dict(endpoints=["ftp://127.0.0.1:8080"]), "not http or https"),
        (dict(endpoints=["http://127.0.0.1:8080/v1"]), "no path"),
        (dict(endpoints=["http://127.0.0.1:99999"]), "HOST:PORT"),
        (dict(endpoints=[server.url], prefetch_at=1.5), "from 0 to 1"),
        (dict(endpoints=[server.url], batch_min=0), "batch_min"),
        (dict(endpoints=[server.url], batch_min=10, batch_max=5), "batch_min 10 is above"),
        (dict(endpoints=[server.url], deadline=0), "deadline"),
        (dict(endpoints=[server.url], max_age="10s"), "max_age"),
        (dict(endpoints=[server.url], backoff=(1.0, 0.5)), "longest wait is below"),
        (dict(endpoints=[server.url], token="a b"), "characters a header cannot carry"),
        (dict(endpoints=["https://127.0.0.1:1"], ca_file="/nonexistent.pem"), "ca_file"),
        (dict(endpoints=[server.url], attempts=0), "attempts"),
    ]
    for kwargs, message in cases:
        with pytest.raises(BadRequest, match=message):
            Client(**kwargs)
    with Client([server.url], **settings()) as client:
        bad: List[Any] = [0, -1, 1.5, True]
        for n in bad:
            with pytest.raises(BadRequest, match="at least 1"):
                client.next_n("order", n)
        with pytest.raises(BadRequest, match="non-empty str"):
            client.next("")
        with pytest.raises(ValueError):
            client.next_named("u5", 5)  # type: ignore[arg-type]


def test_closed_client(server: Server) -> None:
    client = Client([server.url], **settings())
    client.next("order")
    client.close()
    with pytest.raises(ClientClosed):
        client.next("order")
    with pytest.raises(ClientClosed):
        client.next_text("u7")
    s = client.stats("order")
    # What was cached is skipped for good, counted as wasted.
    assert s is not None and s.cached == 0 and s.served == 1 and s.wasted == 99


def test_the_error_hierarchy() -> None:
    for e in (snowdrift_client.UnknownName, snowdrift_client.Unauthorized,
              snowdrift_client.BadRequest, snowdrift_client.Unavailable,
              snowdrift_client.ClientClosed):
        assert issubclass(e, snowdrift_client.SnowdriftError)
    assert issubclass(snowdrift_client.BadRequest, ValueError)
    assert not snowdrift_client.Unavailable.final
    assert snowdrift_client.UnknownName.final and snowdrift_client.Unauthorized.final
    assert TOKEN
