"""Failover: kills, an outage, recovery, /readyz, deadlines, broken answers, and TLS."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from snowdrift_client import Client, Unavailable

from conftest import TOKEN, Cluster, Server, settings
from fake import TEXT_KIND, Fake, http_answer
from test_client import wait_until

#: IDs the fakes hand out start here, far above anything the real servers issue in a test.
FAKE = 10**15


def runs(*items: Tuple[object, object, object], name: str = "order", kind: str = "segment") -> bytes:
    return json.dumps(
        {"name": name, "kind": kind, "runs": [{"first": f, "count": c, "stride": s} for f, c, s in items]}
    ).encode()


#: Broken answers, each with what the endpoint's last error must say.
BROKEN = {
    "not JSON": (http_answer(b"<html>oops</html>"), "not JSON"),
    "truncated": (http_answer(runs((str(FAKE), 10, 1))[:30], length=200), "IncompleteRead"),
    "negative count": (http_answer(runs((str(FAKE), -5, 1))), "-5 IDs"),
    "zero count": (http_answer(runs((str(FAKE), 0, 1))), "a run of 0 IDs"),
    "stride 0": (http_answer(runs((str(FAKE), 10, 0))), "stride 0"),
    "ID over 64 bits": (http_answer(runs(("18446744073709551616", 1, 1))), "passes 2^64 - 1"),
    "run over 64 bits": (http_answer(runs(("18446744073709551610", 10, 1))), "passes 2^64 - 1"),
    "ID at 2^63": (http_answer(runs(("9223372036854775808", 1, 1))), "at or above 2^63"),
    "run past 2^63": (http_answer(runs(("9223372036854775800", 10, 1))), "passes 2^63 - 1"),
    "first not a string": (http_answer(runs((FAKE, 10, 1))), "not a decimal string"),
    "signed first": (http_answer(runs(("-1", 10, 1))), "not a decimal string"),
    "count not a number": (http_answer(runs((str(FAKE), "10", 1))), "not a whole number"),
    "kind of text": (http_answer(runs((str(FAKE), 10, 1), kind="uuid7")), "not a 64-bit kind"),
    "another name": (http_answer(runs((str(FAKE), 10, 1), name="other")), "IDs of 'other'"),
    "more than asked": (http_answer(runs((str(FAKE), 10**9, 1))), "were asked for"),
    "one ID twice": (http_answer(runs((str(FAKE), 10, 1), (str(FAKE + 9), 5, 1))), "twice"),
    "no runs": (http_answer(json.dumps({"name": "order", "kind": "segment", "runs": []}).encode()), "no runs"),
    "text for runs": (http_answer(json.dumps({"name": "order", "ids": ["1"]}).encode()), "text IDs where runs"),
    "a 404 that is not the API's": (http_answer(b"not found", status=404), "not JSON"),
    "empty 200": (http_answer(b""), "not JSON"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_is_a_failed_endpoint_never_ids(server: Server, case: str) -> None:
    answer, said = BROKEN[case]
    fake = Fake(answer)
    try:
        with Client([fake.url, server.url], **settings(batch_min=100, batch_max=100)) as client:
            ids = [client.next("order") for _ in range(1000)]
            assert len(set(ids)) == 1000 and max(ids) < FAKE
            assert fake.id_requests >= 1
            state = client.endpoints()[0]
            assert state.url == fake.url and state.last_error is not None
            assert said in state.last_error, state.last_error
        with Client([fake.url], **settings(attempts=2)) as client:
            with pytest.raises(Unavailable) as e:
                client.next("order")
            message = str(e.value)
            assert "'order'" in message and fake.url in message and said in message, message
            assert e.value.name == "order" and e.value.endpoints[0].url == fake.url
    finally:
        fake.close()


def test_a_broken_text_answer_is_refused(server: Server) -> None:
    cases = [
        (json.dumps({"name": "u7", "ids": ["a", "a"]}).encode(), "twice"),
        (json.dumps({"name": "u7", "ids": [""]}).encode(), "not text"),
        (json.dumps({"name": "u7", "ids": [5]}).encode(), "not text"),
        (json.dumps({"name": "u7", "ids": [str(k) for k in range(11)]}).encode(), "11 IDs where 10"),
    ]
    for body, said in cases:
        fake = Fake(http_answer(body), runs_answer=TEXT_KIND)
        try:
            with Client([fake.url], **settings(attempts=1, batch_min=10, batch_max=10)) as client:
                with pytest.raises(Unavailable, match=said):
                    client.next_text("u7")
            if said == "not text":
                with Client([fake.url], **settings(attempts=1)) as client:
                    with pytest.raises(Unavailable, match=said):
                        client.next_named("u7", "x")
        finally:
            fake.close()


def test_a_server_past_the_deadline_is_left_for_another(server: Server) -> None:
    stall = Fake(b"", stall=30)
    try:
        with Client([stall.url, server.url], **settings(deadline=0.3)) as client:
            ids = client.next_n("order", 500)
            assert len(set(ids)) == 500
            state = client.endpoints()[0]
            assert state.last_error is not None and "Timeout" in state.last_error, state
        with Client([stall.url], **settings(deadline=0.3, attempts=2, health_interval=0)) as client:
            start = time.monotonic()
            with pytest.raises(Unavailable, match="Timeout"):
                client.next("order")
            assert time.monotonic() - start < 10, "the deadline cut the calls"
    finally:
        stall.close()


@pytest.mark.parametrize("what", ["body", "head"])
def test_an_answer_dripped_a_byte_at_a_time_is_cut_at_the_deadline(server: Server, what: str) -> None:
    # A byte every 50 ms, well within any timeout of one read: only a deadline over the whole
    # answer cuts it (without it, one call waited about 20 s here; a body of 110 bytes at
    # 0.5 s a byte held a call 139.7 s with a 2 s deadline).
    answer = http_answer(runs((str(FAKE), 100, 1)))
    head = answer.index(b"\r\n\r\n") + 4
    drip = Fake(answer, drip=0.05, drip_after=head if what == "body" else 0)
    try:
        with Client([drip.url], **settings(deadline=0.5, attempts=2, health_interval=0)) as client:
            start = time.monotonic()
            with pytest.raises(Unavailable, match="deadline"):
                client.next("order")
            took = time.monotonic() - start
            assert took < 2 * 0.5 + 0.5 + 0.5, f"two tries of 0.5 s took {took:.1f} s"
        with Client([drip.url, server.url], **settings(deadline=0.5, batch_min=100, batch_max=100)) as client:
            ids = [client.next("order") for _ in range(500)]
            assert len(set(ids)) == 500 and max(ids) < FAKE
            assert "deadline" in (client.endpoints()[0].last_error or "")
    finally:
        drip.close()


def test_an_endpoint_whose_readyz_says_not_ready_is_avoided(server: Server) -> None:
    fake = Fake(http_answer(runs((str(FAKE), 100, 1))), ready=503)
    try:
        with Client(
            [fake.url, server.url], **settings(health_interval=0.05, batch_min=10, batch_max=10)
        ) as client:
            wait_until("the first look at /readyz", lambda: client.endpoints()[0].ready is False)
            before = fake.id_requests
            ids = [client.next("order") for _ in range(500)]
            assert max(ids) < FAKE and fake.id_requests == before
            state = client.endpoints()[0]
            assert state.healthy is False and state.up is True and state.ready is False
            assert client.endpoints()[1].healthy is True
    finally:
        fake.close()


def test_fetches_go_to_the_endpoints_in_turn(cluster: Cluster) -> None:
    before = [s.requests("200") for s in cluster.servers]
    with Client(cluster.urls, **settings(batch_min=10, batch_max=10)) as client:
        ids = client.next_n("order", 200)
    assert len(set(ids)) == 200
    after = [s.requests("200") - b for s, b in zip(cluster.servers, before)]
    assert after[0] >= 9 and after[1] >= 9, after


def test_kills_then_an_outage_then_recovery(cluster: Cluster) -> None:
    a, b = cluster.servers
    errors: List[BaseException] = []
    ids: List[int] = []
    stop = threading.Event()
    with Client(cluster.urls, **settings(batch_min=50, batch_max=50, deadline=1.0)) as client:

        def draw() -> None:
            while not stop.is_set():
                try:
                    ids.append(client.next("order"))
                except Exception as e:  # noqa: BLE001 - every error is a failure here
                    errors.append(e)
                time.sleep(0.0002)

        t = threading.Thread(target=draw)
        t.start()
        wait_until("IDs from both", lambda: len(ids) > 1000)
        a.kill()
        n = len(ids)
        wait_until("IDs with one server killed", lambda: len(ids) > n + 2000)
        a.start()
        b.kill()
        n = len(ids)
        wait_until("IDs with the other killed", lambda: len(ids) > n + 2000)
        stop.set()
        t.join()
        assert errors == [], errors[:3]
        assert len(ids) == len(set(ids))
        states = {s.url: s for s in client.endpoints()}
        assert states[b.url].last_error is not None and states[b.url].failures >= 1

        # Every server down: the cache first, then the clear error.
        a.kill()
        s = client.stats("order")
        assert s is not None
        cached = s.cached
        served = [client.next("order") for _ in range(cached)]
        assert len(set(served) | set(ids)) == len(ids) + cached
        with pytest.raises(Unavailable) as e:
            client.next("order")
        message = str(e.value)
        assert "'order'" in message
        for url in cluster.urls:
            assert url in message
        assert message.count("Connection") >= 2, message

        # A server back: the same client recovers by itself.
        b.start()

        def works() -> bool:
            try:
                client.next("order")
                return True
            except Unavailable:
                return False

        wait_until("recovery", works)
        wait_until(
            "the server back counts as healthy",
            lambda: {s.url: s for s in client.endpoints()}[b.url].healthy,
        )


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, Path, Path]]:
    d = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=snowdrift python test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    (d / "ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\nbasicConstraints=CA:FALSE\n"
    )
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext")
    yield d / "ca.pem", d / "server.pem", d / "server.key"


def test_tls_with_a_private_ca(tmp_path: Path, tls: Tuple[Path, Path, Path]) -> None:
    ca, cert, key = tls
    s = Server(tmp_path, tmp_path / "ids.db", tls=(cert, key))
    s.ca = ca
    s.start()
    try:
        s.create_tag("order")
        assert s.url.startswith("https://")
        with Client([s.url], token=TOKEN, ca_file=str(ca)) as client:
            ids = client.next_n("order", 10)
            assert len(set(ids)) == 10
            assert client.next_text("u7")
        with Client([s.url], token=TOKEN, attempts=1) as client:
            with pytest.raises(Unavailable, match="CERTIFICATE_VERIFY_FAILED"):
                client.next("order")
    finally:
        s.kill()


def test_ids_a_failed_next_n_had_taken_are_never_handed_out(cluster: Cluster) -> None:
    with Client(cluster.urls, **settings(batch_min=100, batch_max=100, prefetch_at=1.0)) as client:
        first = client.next_n("order", 50)
        cluster.stop()
        with pytest.raises(Unavailable):
            client.next_n("order", 80)
        s = client.stats("order")
        # The 50 it had taken from the cache before the fetch for the other 30 failed.
        assert s is not None and s.wasted == 50 and s.cached == 0, s
        taken = set(range(first[-1] + 1, first[-1] + 51))
        for server in cluster.servers:
            server.start()
        again = client.next_n("order", 500)
        assert not taken & set(again) and not set(first) & set(again)


def test_runs_of_another_kind_than_the_name_issued_are_refused(server: Server) -> None:
    fake = Fake(http_answer(runs((str(FAKE), 100, 1), kind="snowflake")))
    try:
        # The real server first (the turn starts at the first endpoint): the name issues
        # segment IDs; then the fake says snowflake.
        with Client([server.url, fake.url], **settings(batch_min=100, batch_max=100)) as client:
            ids = [client.next("order") for _ in range(1000)]
            assert len(set(ids)) == 1000 and max(ids) < FAKE
            assert fake.id_requests >= 1
            said = client.endpoints()[1].last_error or ""
            assert "kind 'snowflake' for a name that issued 'segment' IDs" in said, said
    finally:
        fake.close()
