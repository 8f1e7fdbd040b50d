"""The Python client's conformance program (clients/conformance/PROTOCOL.md): JSON Lines
requests on stdin, replies on stdout, each translated into calls on snowdrift_client's public
API. With SNOWDRIFT_PY_ASYNC=1 it drives snowdrift_client.AsyncClient (``threads`` become
asyncio tasks on one event loop) instead of snowdrift_client.Client (threads)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import snowdrift_client
from snowdrift_client import AsyncClient, Client

ASYNC = os.environ.get("SNOWDRIFT_PY_ASYNC") == "1"

Reply = Dict[str, Any]


class Refused(Exception):
    """A request the program cannot carry out (kind bad_request)."""


def error(e: BaseException) -> Dict[str, str]:
    if isinstance(e, snowdrift_client.UnknownName):
        kind = "unknown_name"
    elif isinstance(e, snowdrift_client.Unauthorized):
        kind = "unauthorized"
    elif isinstance(e, (snowdrift_client.BadRequest, Refused)):
        kind = "bad_request"
    elif isinstance(e, snowdrift_client.Unavailable):
        kind = "unavailable"
    else:
        kind = "other"
    return {"kind": kind, "message": str(e) or type(e).__name__}


def settings(request: Dict[str, Any]) -> Dict[str, Any]:
    """The client's keyword arguments from an ``open`` request; absent or null: default."""
    out: Dict[str, Any] = {}
    for key, name, scale in [
        ("token", "token", None),
        ("ca_file", "ca_file", None),
        ("prefetch_at", "prefetch_at", None),
        ("hold_ms", "hold", 1000.0),
        ("batch_min", "batch_min", None),
        ("batch_max", "batch_max", None),
        ("max_age_ms", "max_age", 1000.0),
        ("deadline_ms", "deadline", 1000.0),
    ]:
        value = request.get(key)
        if value is not None:
            out[name] = value / scale if scale else value
    return out


def int_field(request: Dict[str, Any], key: str, default: Optional[int] = None) -> int:
    value = request.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Refused(f"{key} is {value!r}: give a whole number")
    return value


def str_field(request: Dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str):
        raise Refused(f"{key} is {value!r}: give a string")
    return value


class Draw:
    """What one ``next`` thread (or task) got."""

    def __init__(self) -> None:
        self.ids: List[str] = []
        self.errors: List[Dict[str, str]] = []
        self.timing: List[Tuple[int, int]] = []

    def reply(self, timing: bool) -> Dict[str, Any]:
        out: Dict[str, Any] = {"ids": self.ids, "errors": self.errors}
        if timing:
            out["timing"] = [list(t) for t in self.timing]
        return out


class Plan:
    """The shape of a ``next`` request."""

    def __init__(self, request: Dict[str, Any]) -> None:
        self.name = str_field(request, "name")
        self.threads = max(int_field(request, "threads", 1), 1)
        count = request.get("count")
        duration = request.get("duration_ms")
        if count is None and duration is None:
            raise Refused("next needs count or duration_ms")
        self.count = None if count is None else int_field(request, "count")
        self.duration = None if duration is None else int_field(request, "duration_ms") / 1000.0
        self.timing = bool(request.get("timing"))
        self.stop_on_error = bool(request.get("stop_on_error"))

    def going(self, draw: Draw, until: float) -> bool:
        if self.count is not None and len(draw.ids) >= self.count:
            return False
        return self.duration is None or time.monotonic() < until


def run_threads(client: Client, plan: Plan) -> List[Draw]:
    draws = [Draw() for _ in range(plan.threads)]
    barrier = threading.Barrier(plan.threads)
    until: List[float] = [0.0]

    def work(draw: Draw) -> None:
        if barrier.wait() == 0:
            until[0] = time.monotonic() + (plan.duration or 0.0)
        barrier.wait()
        name, timing, clock = plan.name, plan.timing, time.time_ns
        while plan.going(draw, until[0]):
            invoked = clock() if timing else 0
            try:
                i = client.next(name)
            except Exception as e:  # noqa: BLE001 - every error is reported
                draw.errors.append(error(e))
                if plan.stop_on_error:
                    return
                continue
            if timing:
                draw.timing.append((invoked, clock()))
            draw.ids.append(str(i))

    threads = [threading.Thread(target=work, args=(d,)) for d in draws]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return draws


async def run_tasks(client: AsyncClient, plan: Plan) -> List[Draw]:
    draws = [Draw() for _ in range(plan.threads)]
    start = asyncio.Event()
    until: List[float] = [0.0]

    async def work(draw: Draw) -> None:
        await start.wait()
        name, timing, clock = plan.name, plan.timing, time.time_ns
        n = 0
        while plan.going(draw, until[0]):
            invoked = clock() if timing else 0
            try:
                i = await client.next(name)
            except Exception as e:  # noqa: BLE001 - every error is reported
                draw.errors.append(error(e))
                if plan.stop_on_error:
                    return
                await asyncio.sleep(0)
                continue
            if timing:
                draw.timing.append((invoked, clock()))
            draw.ids.append(str(i))
            n += 1
            if n % 64 == 0:
                # A warm next() never suspends; let the other tasks take turns.
                await asyncio.sleep(0)

    tasks = [asyncio.ensure_future(work(d)) for d in draws]
    until[0] = time.monotonic() + (plan.duration or 0.0)
    start.set()
    await asyncio.gather(*tasks)
    return draws


class Program:
    def __init__(self) -> None:
        self.client: Union[Client, AsyncClient, None] = None
        self.loop = asyncio.new_event_loop() if ASYNC else None

    def wait(self, call: Any) -> Any:
        """A coroutine's result in async mode, the value itself otherwise."""
        if self.loop is not None:
            return self.loop.run_until_complete(call)
        return call

    def close_client(self) -> None:
        if isinstance(self.client, AsyncClient):
            self.wait(self.client.close())
        elif self.client is not None:
            self.client.close()
        self.client = None

    def need(self) -> Any:
        if self.client is None:
            raise Refused("no client: send open first")
        return self.client

    def handle(self, request: Dict[str, Any]) -> Reply:
        op = request.get("op")
        handlers: Dict[str, Callable[[Dict[str, Any]], Reply]] = {
            "open": self.open,
            "next": self.next,
            "next_n": self.next_n,
            "next_text": self.next_text,
            "next_named": self.next_named,
            "endpoints": self.endpoints,
        }
        handler = handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            raise Refused(f"unknown op {op!r}: open, next, next_n, next_text, next_named, endpoints, close")
        return handler(request)

    def open(self, request: Dict[str, Any]) -> Reply:
        endpoints = request.get("endpoints")
        if not isinstance(endpoints, list):
            raise Refused("open needs endpoints, a list of URLs")
        self.close_client()
        kwargs = settings(request)
        self.client = AsyncClient(endpoints, **kwargs) if ASYNC else Client(endpoints, **kwargs)
        return {}

    def next(self, request: Dict[str, Any]) -> Reply:
        plan = Plan(request)
        client = self.need()
        if isinstance(client, AsyncClient):
            draws = self.wait(run_tasks(client, plan))
        else:
            draws = run_threads(client, plan)
        return {"threads": [d.reply(plan.timing) for d in draws]}

    def next_n(self, request: Dict[str, Any]) -> Reply:
        ids = self.wait(self.need().next_n(str_field(request, "name"), int_field(request, "n")))
        return {"ids": [str(i) for i in ids]}

    def next_text(self, request: Dict[str, Any]) -> Reply:
        client, name = self.need(), str_field(request, "name")
        count = int_field(request, "count", 1)
        return {"ids": [self.wait(client.next_text(name)) for _ in range(count)]}

    def next_named(self, request: Dict[str, Any]) -> Reply:
        client = self.need()
        text = self.wait(client.next_named(str_field(request, "name"), str_field(request, "input")))
        return {"ids": [text]}

    def endpoints(self, request: Dict[str, Any]) -> Reply:
        states = self.need().endpoints()
        return {
            "endpoints": [
                {"url": s.url, "healthy": s.healthy, "last_error": s.last_error} for s in states
            ]
        }


def main() -> None:
    program = Program()
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise Refused("a request is a JSON object")
        except (ValueError, Refused) as e:
            reply: Reply = {"id": None, "ok": False, "error": error(Refused(f"not a request: {e}"))}
            out.write(json.dumps(reply) + "\n")
            out.flush()
            continue
        rid = request.get("id")
        if request.get("op") == "close":
            program.close_client()
            out.write(json.dumps({"id": rid, "ok": True}) + "\n")
            out.flush()
            return
        try:
            reply = {"id": rid, "ok": True, **program.handle(request)}
        except Exception as e:  # noqa: BLE001 - every error is a reply
            reply = {"id": rid, "ok": False, "error": error(e)}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    program.close_client()


if __name__ == "__main__":
    main()
