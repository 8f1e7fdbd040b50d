"""The thread-safe client: a cache per name over the endpoints."""

from __future__ import annotations

import http.client
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Dict, List, Optional, Sequence, Tuple, Type, Union
from urllib.parse import quote

from . import _answer
from ._answer import Broken, Runs, ServerError
from ._cache import NEVER, NUMBERS, ORDERED, TEXT, UNKNOWN, NameCache, Stats
from ._endpoints import Endpoint, Endpoints, EndpointState
from ._errors import (
    BadRequest,
    ClientClosed,
    SnowdriftError,
    Unauthorized,
    Unavailable,
    UnknownName,
)

_log = logging.getLogger("snowdrift_client")
_monotonic = time.monotonic


def _seconds(key: str, value: float, minimum: float = 0.0, above: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{key} is {value!r}: give seconds as a number")
    if value < minimum or (above and value == minimum):
        bound = "above" if above else "at least"
        raise BadRequest(f"{key} is {value!r} s: give {bound} {minimum:g} s")
    return float(value)


def _whole(key: str, value: int, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BadRequest(f"{key} is {value!r}: give a whole number of at least {minimum}")
    return value


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise BadRequest(f"the name {name!r} is not a generator or tag name: give a non-empty str")


def _check_count(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BadRequest(f"n is {n!r}: ask for a whole number of IDs, at least 1")


def _why(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class Client:
    """A snowdrift client: IDs from a cache per name, refilled from the servers in the
    background, over HTTP/1.1 (``form=runs``). Safe to share between threads.

    >>> with snowdrift_client.Client(endpoints=["http://10.0.0.1:8080"]) as client:
    ...     order_id = client.next("order")

    :param endpoints: the servers, ``http://HOST:PORT`` or ``https://HOST:PORT``. Required.
    :param token: the bearer token, when the servers have auth on.
    :param ca_file: a PEM bundle that ``https://`` endpoints are checked against, besides the
        system's roots (for a private CA).
    :param prefetch_at: the share of a batch used before the next one is fetched in the
        background, 0 to 1.
    :param hold: seconds a batch should last at the rate IDs are being taken; the batch size
        adapts to it.
    :param batch_min: the smallest batch fetched.
    :param batch_max: the largest batch fetched.
    :param max_age: seconds cached snowflake IDs may be handed out after they were fetched;
        older ones are dropped (counted as wasted), never handed out late.
    :param deadline: seconds one HTTP request may take before it is cut and tried on another
        endpoint.
    :param attempts: requests one fetch makes across the endpoints before it gives up.
        Default: twice the number of endpoints, at least 3.
    :param backoff: the first and the longest wait, in seconds, before an endpoint that
        failed is tried again (doubling in between, with jitter).
    :param max_count: the most IDs one request asks for: the servers' ``limits.max_count``
        (default 10,000). A larger batch is fetched as several requests.
    :param health_interval: seconds between two looks at every endpoint's ``/readyz`` (by a
        background thread); 0 turns the looks off.
    :raises BadRequest: a setting is out of its range or an endpoint is not a URL the client
        reads.
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        token: Optional[str] = None,
        ca_file: Optional[str] = None,
        *,
        prefetch_at: float = 0.8,
        hold: float = 10.0,
        batch_min: int = 100,
        batch_max: int = 1_000_000,
        max_age: float = 10.0,
        deadline: float = 2.0,
        attempts: Optional[int] = None,
        backoff: Tuple[float, float] = (0.05, 2.0),
        max_count: int = 10_000,
        health_interval: float = 1.0,
    ) -> None:
        if isinstance(endpoints, str) or not all(isinstance(u, str) for u in endpoints):
            raise BadRequest(
                f"endpoints is {endpoints!r}: give a list of URLs, e.g. "
                '["http://10.0.0.1:8080", "http://10.0.0.2:8080"]'
            )
        if isinstance(prefetch_at, bool) or not isinstance(prefetch_at, (int, float)) or not (
            0.0 <= prefetch_at <= 1.0
        ):
            raise BadRequest(
                f"prefetch_at is {prefetch_at!r}: give a share from 0 to 1 (0.8 fetches the next "
                "batch once 80% of the current one is used)"
            )
        self._hold = _seconds("hold", hold, 0.0, above=False)
        self._batch_min = _whole("batch_min", batch_min, 1)
        self._batch_max = _whole("batch_max", batch_max, 1)
        if batch_min > batch_max:
            raise BadRequest(f"batch_min {batch_min} is above batch_max {batch_max}: give min <= max")
        self._max_age = _seconds("max_age", max_age)
        self._deadline = _seconds("deadline", deadline)
        if not isinstance(backoff, tuple) or len(backoff) != 2:
            raise BadRequest(f"backoff is {backoff!r}: give (first, longest) in seconds")
        first = _seconds("backoff's first wait", backoff[0])
        longest = _seconds("backoff's longest wait", backoff[1])
        if longest < first:
            raise BadRequest(f"backoff {backoff!r}: the longest wait is below the first")
        self._backoff = (first, longest)
        self._max_count = _whole("max_count", max_count, 1)
        health = _seconds("health_interval", health_interval, 0.0, above=False)
        self._headers: Dict[str, str] = {}
        if token is not None:
            if not isinstance(token, str) or not token.strip():
                raise BadRequest("token: give the bearer token as a non-empty str, or None")
            token = token.strip()
            if any(not ("!" <= ch <= "~") for ch in token):
                raise BadRequest(
                    "the token has characters a header cannot carry (spaces, control or "
                    "non-ASCII characters): check it was copied whole"
                )
            self._headers["Authorization"] = f"Bearer {token}"
        if ca_file is not None and not isinstance(ca_file, str):
            raise BadRequest(f"ca_file is {ca_file!r}: give the path of a PEM file")
        self._prefetch_at = float(prefetch_at)
        self._endpoints = Endpoints(list(endpoints), ca_file, self._backoff, health, self._deadline)
        n = len(self._endpoints.list)
        self._attempts = max(2 * n, 3) if attempts is None else _whole("attempts", attempts, 1)
        self._caches: Dict[str, NameCache] = {}
        self._caches_lock = threading.Lock()
        self._closed = False
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="snowdrift-prefetch")
        self._endpoints.start_health()

    # --- the API --------------------------------------------------------------------

    def next(self, name: str) -> int:
        """The next ID of generator or tag ``name`` (a 64-bit kind). It waits on the network
        only when the cache is empty; once a batch is used past ``prefetch_at`` the next one
        is fetched in the background.

        :raises UnknownName: no such name on the servers.
        :raises Unauthorized: the token was refused.
        :raises BadRequest: the name issues text IDs (use :meth:`next_text`), or the server
            refused the request.
        :raises Unavailable: no server answered and the cache is empty.
        """
        c = self._caches.get(name)
        if c is not None:
            with c.lock:
                i = c.next_id
                if i < c.end and (not c.expiring or _monotonic() <= c.expires_at):
                    c.next_id = i + c.stride
                    if i < c.mark:
                        return i
                    c.mark = NEVER
                else:
                    i = -1
            if i >= 0:
                self._prefetch(name, c)
                return i
        return self.next_n(name, 1)[0]

    def _try_next(self, name: str) -> Optional[int]:
        """The next ID of ``name`` if the cache has one, without waiting on the network."""
        c = self._caches.get(name)
        if c is None:
            return None
        with c.lock:
            i = c.next_id
            if i < c.end and (not c.expiring or _monotonic() <= c.expires_at):
                c.next_id = i + c.stride
                if i < c.mark:
                    return i
                c.mark = NEVER
            else:
                return None
        self._prefetch(name, c)
        return i

    def _try_next_text(self, name: str) -> Optional[str]:
        """The next text ID of ``name`` if the cache has one, without waiting on the network."""
        c = self._caches.get(name)
        if c is None:
            return None
        with c.lock:
            text, crossed = c.take_text()
        if crossed:
            self._prefetch(name, c)
        return text

    def next_n(self, name: str, n: int) -> List[int]:
        """``n`` new IDs of ``name`` (a 64-bit kind), from the cache and as many fetches as
        they take.

        A ``tso`` generator's IDs are never cached: each call is one request for exactly
        ``n``, so an ID returned after another returned (on any client) is larger, as the
        oracle promises. Raises as :meth:`next`; IDs it had taken when a fetch for the rest
        failed are skipped, never handed out.
        """
        _check_count(n)
        c = self._cache(name)
        out: List[int] = []
        while True:
            if c.kind == TEXT:
                raise BadRequest(
                    f"{name!r} issues text IDs (UUID, ULID, ObjectId, ...): use next_text"
                )
            if c.kind == ORDERED:
                self._lose(c, len(out))
                return self._ordered(name, c, n)
            with c.lock:
                crossed = c.take_into(out, n)
            if crossed:
                self._prefetch(name, c)
            if len(out) == n:
                return out
            try:
                direct = self._refill(name, c, n - len(out), text=False)
            except BaseException:
                self._lose(c, len(out))
                raise
            if direct is not None:
                # The fetch showed a tso name: its IDs were fetched within this call, so
                # they may be handed out; what was cached before is older and is not.
                if out or len(direct) < n:
                    self._lose(c, len(out))
                    with c.lock:
                        c.discarded += len(direct)
                    return self._ordered(name, c, n)
                with c.lock:
                    c.served_direct += n
                    c.discarded += len(direct) - n
                return direct[:n]

    def next_text(self, name: str) -> str:
        """The next ID of ``name`` for a text kind (UUID, ULID, ObjectId, TypeID, KSUID,
        templated counter), from the name's cache. Raises as :meth:`next`; a name that
        issues 64-bit IDs is a :class:`BadRequest` (the first call for a name asks for runs,
        which a text kind refuses before issuing anything, so that the kind is known)."""
        c = self._cache(name)
        while True:
            if c.kind in (NUMBERS, ORDERED):
                raise BadRequest(f"{name!r} issues 64-bit IDs: use next or next_n")
            with c.lock:
                text, crossed = c.take_text()
            if crossed:
                self._prefetch(name, c)
            if text is not None:
                return text
            self._refill(name, c, 1, text=True)

    def next_named(self, name: str, input: str) -> str:
        """The UUID a ``uuid3`` or ``uuid5`` generator ``name`` makes of ``input`` (hashed
        under the generator's namespace): the same input always gives the same UUID, so
        nothing is cached; each call is one request (``input=`` over HTTP)."""
        _check_name(name)
        if not isinstance(input, str):
            raise BadRequest(f"input is {input!r}: give the name to hash as a str")
        self._check_open()
        answer = self._call(name, 1, runs=False, input=input)
        assert isinstance(answer, list)
        return answer[0]

    def endpoints(self) -> Tuple[EndpointState, ...]:
        """How each endpoint stands: avoided or not, what its ``/readyz`` said, its failures
        in a row and last error."""
        return self._endpoints.states()

    def stats(self, name: str) -> Optional[Stats]:
        """The counts of ``name``'s cache, None if the client never asked for it."""
        c = self._caches.get(name)
        return None if c is None else c.stats()

    def close(self) -> None:
        """Stops the background threads and closes the connections. IDs still cached are
        skipped, never reused. Further calls raise :class:`ClientClosed`."""
        if self._closed:
            return
        self._closed = True
        self._endpoints.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._caches_lock:
            caches = list(self._caches.values())
        for c in caches:
            c.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        urls = [e.url for e in self._endpoints.list]
        return f"snowdrift_client.Client(endpoints={urls!r}{', closed' if self._closed else ''})"

    # --- the cache ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("the snowdrift client was closed: make a new one")

    def _cache(self, name: str) -> NameCache:
        c = self._caches.get(name)
        if c is None:
            _check_name(name)
            self._check_open()
            with self._caches_lock:
                c = self._caches.get(name)
                if c is None:
                    c = NameCache(
                        self._prefetch_at, self._hold, self._batch_min, self._batch_max, self._max_age
                    )
                    self._caches[name] = c
        elif self._closed:
            self._check_open()
        return c

    def _lose(self, c: NameCache, n: int) -> None:
        if n:
            with c.lock:
                c.wasted += n

    def _refill(self, name: str, c: NameCache, demand: int, text: bool) -> Optional[List[int]]:
        """Waits for IDs for a caller that found the cache empty: from the fetch in flight,
        or a fetch of its own. Returns the IDs of a fetch that showed a ``tso`` name."""
        # The fetch in flight may be a batch of several requests: IDs of its first request
        # end this wait, without waiting for the rest.
        while not c.fetch_lock.acquire(timeout=0.002):
            if c.has_ids(text):
                return None
        try:
            self._check_open()
            if c.kind == ORDERED or c.has_ids(text):
                return None
            if text and c.kind == UNKNOWN:
                # form=ids would answer a 64-bit name's IDs as decimal text: ask for runs
                # first, which a text kind refuses (409) before issuing anything, so the
                # kind is known as the Rust client knows it from its first answer.
                try:
                    direct = self._fill(name, c, c.next_size(demand), False)
                    if direct is not None:
                        with c.lock:
                            c.discarded += len(direct)
                    return None
                except BadRequest as e:
                    if e.code != "unsupported":
                        raise
                with c.lock:
                    c.kind = TEXT
            return self._fill(name, c, c.next_size(demand), text)
        finally:
            c.fetch_lock.release()

    def _fill(self, name: str, c: NameCache, size: int, text: bool) -> Optional[List[int]]:
        """Fetches a batch of ``size`` IDs into ``c``; the caller holds ``c.fetch_lock``.
        Returns the IDs instead when they showed a ``tso`` name (never cached)."""
        if text:
            ids = self._call(name, min(size, self._max_count), runs=False, cache=c)
            assert isinstance(ids, list)
            c.push_texts(ids)
            c.fetched()
            return None
        mark_index = min(size - 1, int(size * self._prefetch_at))
        got = 0
        while got < size:
            try:
                batch = self._call(name, min(size - got, self._max_count), runs=True, cache=c)
            except SnowdriftError as e:
                # What came before is whole and new: keep it.
                if got > 0 and not e.final:
                    break
                raise
            assert isinstance(batch, Runs)
            if batch.kind == "tso":
                with c.lock:
                    c.kind = ORDERED
                    c.fetches += 1
                return [f + k * s for f, count, s in batch.runs for k in range(count)]
            total = batch.total()
            mark_at = mark_index - got if got <= mark_index < got + total else None
            c.push_runs(batch.runs, batch.kind == "snowflake", mark_at)
            got += total
        c.fetched()
        return None

    def _ordered(self, name: str, c: NameCache, n: int) -> List[int]:
        """``n`` IDs of a ``tso`` name, fetched for this caller alone."""
        self._check_open()
        batch = self._call(name, n, runs=True, cache=c)
        assert isinstance(batch, Runs)
        ids = [f + k * s for f, count, s in batch.runs for k in range(count)]
        if len(ids) != n:
            raise Unavailable(
                f"{name!r}: asked for {n} IDs, the server answered {len(ids)}",
                name,
                self._endpoints.states(),
            )
        with c.lock:
            c.fetches += 1
            c.served_direct += n
        return ids

    def _prefetch(self, name: str, c: NameCache) -> None:
        """Fetches ``name``'s next batch in the background, unless one is on its way."""
        with c.lock:
            if c.prefetching or c.closed:
                return
            c.prefetching = True
        try:
            self._pool.submit(self._prefetch_run, name, c)
        except RuntimeError:
            # Closed meanwhile.
            c.prefetching = False

    def _prefetch_run(self, name: str, c: NameCache) -> None:
        try:
            with c.fetch_lock:
                if c.kind == ORDERED or self._closed:
                    return
                direct = self._fill(name, c, c.next_size(1), c.kind == TEXT)
                if direct is not None:
                    with c.lock:
                        c.discarded += len(direct)
        except SnowdriftError as e:
            # A caller that runs dry fetches again and gets the error itself.
            _log.debug("snowdrift prefetch of %r failed: %s", name, e)
        except Exception:
            _log.exception("snowdrift prefetch of %r failed", name)
        finally:
            c.prefetching = False

    # --- one request, with failover -------------------------------------------------

    def _call(
        self,
        name: str,
        asked: int,
        runs: bool,
        input: Optional[str] = None,
        cache: Optional[NameCache] = None,
    ) -> Union[Runs, List[str]]:
        """One answer for ``asked`` IDs of ``name``: each try on the next endpoint in turn,
        a failed or broken one retried elsewhere after a backoff, a final error raised at
        once. With the name's ``cache``, runs of another kind than the name issued before,
        or runs or text IDs that repeat IDs it received before, are refused as broken, and
        accepted ones recorded."""
        path = f"/v1/ids/{quote(name, safe='')}?count={asked}"
        if runs:
            path += "&form=runs"
        if input is not None:
            path += f"&input={quote(input, safe='')}"
        last = "no try was made"
        slept = 0.0
        for attempt in range(self._attempts):
            if self._closed:
                raise ClientClosed("the snowdrift client was closed: make a new one")
            e = self._endpoints.pick()
            wait = e.retry_at - _monotonic()
            if attempt > 0 and wait > 0:
                # Every endpoint is left out: wait for the first to be due, but within one
                # deadline in all, so a call with no server gives up in bounded time.
                wait = min(wait, self._deadline - slept)
                if wait > 0:
                    time.sleep(wait)
                    slept += wait
            try:
                status, body = e.get(path, self._headers, self._deadline)
            except (OSError, http.client.HTTPException, ValueError) as error:
                last = f"{e.url}: {_why(error)}"
                e.failed(last)
                continue
            try:
                if status == 200:
                    answer: Union[Runs, List[str]] = (
                        _answer.runs(body, name, asked) if runs else _answer.texts(body, name, asked)
                    )
                    if cache is not None and isinstance(answer, Runs):
                        known = cache.run_kind
                        if known is not None and answer.kind != known:
                            raise Broken(
                                f"runs of kind {answer.kind!r} for a name that issued {known!r} IDs"
                            )
                        why = cache.guard.admit(answer.runs)
                        if why is not None:
                            raise Broken(why)
                        cache.run_kind = answer.kind
                    elif cache is not None and isinstance(answer, list):
                        why = cache.text_guard.admit(answer)
                        if why is not None:
                            raise Broken(why)
                    e.succeeded()
                    return answer
                server = _answer.error_of(status, body)
            except Broken as b:
                last = f"endpoint {e.url} answered, for {name!r}, {b}: a broken answer is refused"
                _log.warning("snowdrift client: %s", last)
                e.failed(last, refused=True)
                continue
            final = self._final(e, name, server)
            if final is not None:
                raise final
            last = f"{e.url}: status {status} ({server.code}): {server.message}"
            e.failed(last)
        raise Unavailable(
            f"{name!r}: no server gave IDs and the cache has none, after {self._attempts} "
            f"tries (last: {last}); endpoints: {self._endpoints.describe()}",
            name,
            self._endpoints.states(),
        )

    def _final(self, e: Endpoint, name: str, error: ServerError) -> Optional[SnowdriftError]:
        """The error to raise at once for a server's final answer, None for one to retry."""
        said = f"{e.url} answered {error.status} ({error.code}): {error.message}"
        if error.status in (401, 403):
            return Unauthorized(f"{name!r}: the token was refused; {said}", error.status)
        if error.status == 404 and error.code == "not_found":
            return UnknownName(f"{name!r}: no generator or tag of that name; {said}")
        if error.status == 400:
            return BadRequest(f"{name!r}: the server refused the request; {said}", 400, error.code)
        if error.status == 409:
            return BadRequest(
                f"{name!r}: the name's kind cannot answer this; {said}", 409, error.code
            )
        return None
