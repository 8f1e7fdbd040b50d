"""The asyncio client: the thread-safe client's cache, with every wait moved off the loop."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Callable, List, Optional, Sequence, Tuple, Type, TypeVar

from ._cache import Stats
from ._client import Client
from ._endpoints import EndpointState

T = TypeVar("T")


class AsyncClient:
    """The asyncio form of :class:`Client`: the same settings, the same cache, the same
    methods as coroutines.

    A warm ``await client.next(name)`` takes its ID from the cache on the event loop (a few
    arithmetic steps under a lock that is never held across the network), so it costs no
    thread hop. A call that must wait for a fetch, and every ``tso`` call, runs the blocking
    HTTP request in this client's own thread pool, so the event loop never blocks on the
    network; background prefetches run in threads as for :class:`Client`.

    >>> async with snowdrift_client.AsyncClient(endpoints=["http://10.0.0.1:8080"]) as client:
    ...     order_id = await client.next("order")

    Takes the parameters of :class:`Client`, plus ``max_waiting``: the threads that may wait
    on the network at once for this client's callers (default 32).
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        token: Optional[str] = None,
        ca_file: Optional[str] = None,
        *,
        max_waiting: int = 32,
        **settings: Any,
    ) -> None:
        self._client = Client(endpoints, token, ca_file, **settings)
        self._pool = ThreadPoolExecutor(
            max_workers=max(int(max_waiting), 1), thread_name_prefix="snowdrift-async"
        )

    async def _off_loop(self, call: Callable[..., T], *args: Any) -> T:
        self._client._check_open()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(call, *args))

    async def next(self, name: str) -> int:
        """The next ID of ``name`` (a 64-bit kind); see :meth:`Client.next`."""
        i = self._client._try_next(name)
        if i is not None:
            return i
        return await self._off_loop(self._client.next, name)

    async def next_n(self, name: str, n: int) -> List[int]:
        """``n`` new IDs of ``name``; see :meth:`Client.next_n`."""
        return await self._off_loop(self._client.next_n, name, n)

    async def next_text(self, name: str) -> str:
        """The next ID of a text kind; see :meth:`Client.next_text`."""
        text = self._client._try_next_text(name)
        if text is not None:
            return text
        return await self._off_loop(self._client.next_text, name)

    async def next_named(self, name: str, input: str) -> str:
        """The UUID a ``uuid3``/``uuid5`` generator makes of ``input``; see
        :meth:`Client.next_named`."""
        return await self._off_loop(self._client.next_named, name, input)

    def endpoints(self) -> Tuple[EndpointState, ...]:
        """How each endpoint stands; see :meth:`Client.endpoints`."""
        return self._client.endpoints()

    def stats(self, name: str) -> Optional[Stats]:
        """The counts of ``name``'s cache; see :meth:`Client.stats`."""
        return self._client.stats(name)

    async def close(self) -> None:
        """Closes the client (see :meth:`Client.close`) and its thread pool."""
        self._client.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return "snowdrift_client.Async" + repr(self._client)[len("snowdrift_client.") :]
