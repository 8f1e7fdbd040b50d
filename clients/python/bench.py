"""Warm ``next()`` of snowdrift_client beside Python's own one-HTTP-request-per-ID loop, in
one run, rounds alternating, medians (BENCHMARKS.md, "The Python client"). Run by
``clients/python/bench``, which installs the package in a venv first.

Starts its own ``snowdrift serve`` (``$SNOWDRIFT_BIN``) on a SQLite store, or uses
``--target URL`` (with ``--token``) and its tag ``order``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

import snowdrift_client


def start_server(binary: str, home: Path, port: int) -> "subprocess.Popen[bytes]":
    config = home / "bench.toml"
    config.write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\nurl = "sqlite://{home / "ids.db"}"\n'
        f'[worker]\nregistry = "file"\npath = "{home / "workers"}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNOWDRIFT_")}
    env["SNOWDRIFT_LOG"] = "warn"
    log = open(home / "server.log", "wb")
    process = subprocess.Popen([binary, "serve", "--config", str(config)], stdout=log, stderr=log, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1):
                break
        except OSError:
            time.sleep(0.05)
    request = urllib.request.Request(
        url + "/v1/tags",
        data=json.dumps({"tag": "order", "step": 1_000_000}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).close()
    return process


def rate(loop: Callable[[float], int], seconds: float) -> Tuple[float, float]:
    """IDs per second of ``loop``, which runs until the given monotonic time and returns
    how many IDs it took: per second of wall clock, and per second of this process's CPU
    time (all its threads, the prefetch included), which a shared machine's load does not
    stretch."""
    start, cpu = time.perf_counter(), time.process_time()
    n = loop(time.monotonic() + seconds)
    return n / (time.perf_counter() - start), n / max(time.process_time() - cpu, 1e-9)


def warm_loop(client: snowdrift_client.Client) -> Callable[[float], int]:
    def loop(until: float) -> int:
        nxt, n = client.next, 0
        while time.monotonic() < until:
            for _ in range(10_000):
                nxt("order")
            n += 10_000
        return n

    return loop


def threads_loop(client: snowdrift_client.Client, threads: int) -> Callable[[float], int]:
    def loop(until: float) -> int:
        counts = [0] * threads

        def one(k: int) -> None:
            counts[k] = warm_loop(client)(until)

        ts = [threading.Thread(target=one, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(counts)

    return loop


def async_loop(client: snowdrift_client.AsyncClient) -> Callable[[float], int]:
    async def run(until: float) -> int:
        nxt, n = client.next, 0
        while time.monotonic() < until:
            for _ in range(10_000):
                await nxt("order")
            n += 10_000
        return n

    def loop(until: float) -> int:
        return asyncio.run(run(until))

    return loop


def http_loop(url: str, token: Optional[str]) -> Callable[[float], int]:
    """Python's own way without a client: one kept-alive HTTP/1.1 request per ID."""
    parts = urlsplit(url)
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def loop(until: float) -> int:
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=5)
        n = 0
        while time.monotonic() < until:
            conn.request("GET", "/v1/ids/order?count=1", headers=headers)
            answer = conn.getresponse()
            body = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"{answer.status}: {body[:200]!r}")
            int(json.loads(body)["ids"][0])
            n += 1
        conn.close()
        return n

    return loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", help="a running server (default: start one)")
    parser.add_argument("--token")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--port", type=int, default=18390)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="snowdrift-py-bench-"))
    process = None
    url = args.target
    if url is None:
        repo = Path(__file__).resolve().parents[2]
        binary = os.environ.get("SNOWDRIFT_BIN") or str(repo / "target" / "debug" / "snowdrift")
        process = start_server(binary, home, args.port)
        url = f"http://127.0.0.1:{args.port}"
    load_before = os.getloadavg()
    try:
        client = snowdrift_client.Client([url], token=args.token)
        aclient = snowdrift_client.AsyncClient([url], token=args.token)
        rows: Dict[str, Callable[[float], int]] = {
            "client `next()`, 1 thread": warm_loop(client),
            "client `next()`, 2 threads (together)": threads_loop(client, 2),
            "AsyncClient `await next()`, 1 task": async_loop(aclient),
            "one HTTP request per ID (http.client, kept alive, 1 thread)": http_loop(url, args.token),
        }
        # Warm up: the first batches, and the batch size grown to the rate.
        for name in list(rows)[:3]:
            rate(rows[name], 1.0)
        results: Dict[str, List[float]] = {name: [] for name in rows}
        per_cpu: Dict[str, List[float]] = {name: [] for name in rows}
        for r in range(args.rounds):
            for name, loop in rows.items():
                wall, cpu = rate(loop, args.seconds)
                results[name].append(wall)
                per_cpu[name].append(cpu)
            print(f"round {r + 1}: " + ", ".join(f"{v[-1]:,.0f}" for v in results.values()), file=sys.stderr)
        client.close()
        asyncio.run(aclient.close())
    finally:
        if process is not None:
            process.kill()
            process.wait()
        shutil.rmtree(home, ignore_errors=True)
    load_after = os.getloadavg()

    per_request = statistics.median(results[list(rows)[-1]])
    print(f"Python {platform.python_version()} ({platform.python_implementation()}), "
          f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}")
    print(f"{args.rounds} rounds of {args.seconds:g} s, alternating; server {url}\n")
    print(f"| what | IDs/s ({args.rounds} rounds) | median | beside one request per ID "
          "| IDs per CPU-second of this process (median) |")
    print("|---|---|---|---|---|")
    for name, values in results.items():
        median = statistics.median(values)
        shown = " / ".join(f"{v:,.0f}" for v in values)
        print(f"| {name} | {shown} | **{median:,.0f}** | {median / per_request:,.0f}× "
              f"| {statistics.median(per_cpu[name]):,.0f} |")


if __name__ == "__main__":
    main()
