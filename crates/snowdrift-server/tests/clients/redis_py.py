"""redis-py (PyPI's `redis`) against snowdrift's RESP listener, called as a Python user would
call it: `r.incr(name)` (which sends INCRBY name 1), the default `pipeline()` (MULTI/EXEC),
a pipeline without a transaction, and `r.info()`. Run by scripts/resp-clients; exits non-zero
with a message on the first thing that does not hold.

Usage: python redis_py.py RESP_HOST:PORT HTTP_BASE TAG
"""

import json
import sys
import urllib.request

import redis


def decoded(http, name, id_text):
    """The HTTP API's decode of an ID, so an ID is checked to be one the server made."""
    with urllib.request.urlopen(f"{http}/v1/ids/{name}/decode/{id_text}", timeout=60) as r:
        assert r.status == 200, r.status
        return json.load(r)


def main():
    address, http, tag = sys.argv[1], sys.argv[2], sys.argv[3]
    host, port = address.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=60)

    # r.incr sends INCRBY name 1: a snowflake name must answer it with an ID.
    a = r.incr("snowflake")
    b = r.incr("snowflake")
    assert isinstance(a, int) and 0 < a < b, (a, b)
    assert decoded(http, "snowflake", a)["id"] == str(a)
    first = r.incr(tag)
    assert r.incr(tag) == first + 1
    assert r.incr(tag, 5) == first + 6, "INCRBY tag 5 answers the last of five"

    # The default pipeline is a transaction: MULTI, the commands, EXEC, replies in order.
    pipe = r.pipeline()
    pipe.incr("snowflake").incr(tag).incr("uuid7").incr(tag)
    s, t1, u, t2 = pipe.execute()
    assert isinstance(s, int) and s > b, (s, b)
    assert t1 == first + 7 and t2 == first + 8, (first, t1, t2)
    assert isinstance(u, bytes) and len(u) == 36, u
    # An error inside the transaction is that command's reply; the others still run.
    pipe = r.pipeline()
    pipe.incr(tag).incr("snowflake", 3).incr(tag)
    replies = pipe.execute(raise_on_error=False)
    assert replies[0] == first + 9 and replies[2] == first + 10, replies
    assert isinstance(replies[1], redis.ResponseError), replies
    assert "WRONGTYPE" in str(replies[1]) or "consecutive" in str(replies[1]), replies[1]
    # DISCARD drops what was queued.
    pipe = r.pipeline()
    pipe.incr(tag)
    pipe.reset()
    assert r.incr(tag) == first + 11

    # Without a transaction, too.
    pipe = r.pipeline(transaction=False)
    for _ in range(100):
        pipe.incr(tag)
    got = pipe.execute()
    assert got == list(range(first + 12, first + 112)), got[:3]

    info = r.info()
    assert info.get("loading") == 0 and "redis_version" in info, info
    print(f"redis-py {redis.__version__}: incr, pipeline (MULTI/EXEC and plain), info: ok")


if __name__ == "__main__":
    main()
