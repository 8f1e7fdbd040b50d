"""The conformance program (clients/python/conformance/program.py) speaks PROTOCOL.md, in
both of its modes, against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import TOKEN, TSO, Server

PROGRAM = Path(__file__).resolve().parents[1] / "conformance" / "program.py"


def talk(requests: List[Dict[str, Any]], asynchronous: bool) -> List[Dict[str, Any]]:
    env = {**os.environ, "SNOWDRIFT_PY_ASYNC": "1" if asynchronous else "0"}
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run(
        [sys.executable, str(PROGRAM)], input=lines.encode(), capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_program_speaks_the_protocol(server: Server, asynchronous: bool) -> None:
    replies = talk(
        [
            {"id": 1, "op": "open", "endpoints": [server.url], "token": TOKEN, "prefetch_at": 0.8,
             "hold_ms": 10000, "batch_min": 1, "batch_max": 100000, "max_age_ms": 10000,
             "deadline_ms": 2000, "ca_file": None, "unknown_key": 1},
            {"id": 2, "op": "next", "name": "order", "count": 3000, "threads": 4, "timing": True},
            {"id": 3, "op": "next_n", "name": "order", "n": 1000},
            {"id": 4, "op": "next_text", "name": "u7", "count": 10},
            {"id": 5, "op": "next_named", "name": "u5", "input": "example.com"},
            {"id": 6, "op": "endpoints"},
            {"id": 7, "op": "next", "name": "nope", "count": 5, "threads": 2, "stop_on_error": True},
            {"id": 8, "op": "teleport"},
            {"id": 9, "op": "next", "name": TSO, "duration_ms": 200, "threads": 2},
            {"id": 10, "op": "open", "endpoints": [server.url], "token": "sd_wrong"},
            {"id": 11, "op": "next_n", "name": "order", "n": 1},
            {"id": 12, "op": "close"},
        ],
        asynchronous,
    )
    assert [r["id"] for r in replies] == list(range(1, 13))
    r = {x["id"]: x for x in replies}
    assert all(r[k]["ok"] for k in (1, 2, 3, 4, 5, 6, 7, 9, 10, 12))
    threads = r[2]["threads"]
    assert len(threads) == 4
    ids = [int(i) for t in threads for i in t["ids"]]
    ids += [int(i) for i in r[3]["ids"]]
    assert len(ids) == len(set(ids)) == 4 * 3000 + 1000
    for t in threads:
        assert all(isinstance(i, str) for i in t["ids"]) and t["errors"] == []
        mine = [int(i) for i in t["ids"]]
        assert all(a < b for a, b in zip(mine, mine[1:]))
        assert len(t["timing"]) == 3000 and all(a <= b for a, b in t["timing"])
    assert len(set(r[4]["ids"])) == 10
    assert r[5]["ids"] == ["cfbff0d1-9375-5685-968c-48ce8b15ae17"]
    assert r[6]["endpoints"] == [{"url": server.url, "healthy": True, "last_error": None}]
    for t in r[7]["threads"]:
        assert t["ids"] == [] and [e["kind"] for e in t["errors"]] == ["unknown_name"]
    assert r[8]["ok"] is False and r[8]["error"]["kind"] == "bad_request"
    ts = [int(i) for t in r[9]["threads"] for i in t["ids"]]
    assert ts and len(ts) == len(set(ts)) and "timing" not in r[9]["threads"][0]
    assert r[11]["ok"] is False and r[11]["error"]["kind"] == "unauthorized"
    assert "401" in r[11]["error"]["message"]
