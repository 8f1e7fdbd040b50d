"""One name's cache: its runs of 64-bit IDs or its text IDs, the one fetch at a time that
refills it, the batch size that follows the rate of use, and its counts.

Every field below is read and written under ``lock``, which is held only for a few
arithmetic steps, never across the network; ``fetch_lock`` serializes the fetches of the name
(a caller that finds the cache empty waits for the fetch in flight rather than start another).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Deque, List, Optional, Tuple

from ._guard import Guard, TextGuard

#: Above every 64-bit ID: the prefetch mark of a run that has none.
NEVER = 1 << 65

UNKNOWN = 0
NUMBERS = 1
TEXT = 2
#: Timestamp-oracle IDs: strictly increasing across every client only if each is handed out
#: as it comes from the server, so none is cached.
ORDERED = 3


@dataclass(frozen=True)
class Stats:
    """The counts of one name's cache (:meth:`snowdrift_client.Client.stats`)."""

    #: IDs handed out.
    served: int
    #: Batches fetched (a batch above ``max_count`` is several requests, counted once).
    fetches: int
    #: IDs skipped for good: snowflake IDs dropped unused once older than ``max_age`` (never
    #: handed out late), IDs a failed ``next_n`` had taken, and the extra IDs of the batch
    #: that showed a name is a ``tso``; after ``close()``, what was still cached.
    wasted: int
    #: IDs cached now.
    cached: int
    #: The size of the next fetch, as adapted to the rate of use.
    batch: int


class _Run:
    __slots__ = ("first", "end", "stride", "mark", "expires_at")

    def __init__(self, first: int, end: int, stride: int, mark: int, expires_at: float) -> None:
        self.first = first
        self.end = end
        self.stride = stride
        self.mark = mark
        self.expires_at = expires_at


class NameCache:
    """One name's cache. The current run's fields are flat attributes so that the warm
    ``next()`` reads them with no indirection."""

    __slots__ = (
        "lock",
        "fetch_lock",
        "guard",
        "text_guard",
        "run_kind",
        "next_id",
        "end",
        "stride",
        "mark",
        "expiring",
        "expires_at",
        "queue",
        "texts",
        "text_mark",
        "kind",
        "prefetching",
        "closed",
        "pushed",
        "wasted",
        "fetches",
        "served_direct",
        "discarded",
        "texts_taken",
        "size",
        "last_fetch",
        "served_then",
        "prefetch_at",
        "hold",
        "batch_min",
        "batch_max",
        "max_age",
    )

    def __init__(
        self, prefetch_at: float, hold: float, batch_min: int, batch_max: int, max_age: float
    ) -> None:
        self.lock = threading.Lock()
        self.fetch_lock = threading.Lock()
        #: Every 64-bit ID the name received, to refuse a server that repeats them.
        self.guard = Guard()
        #: The newest text IDs the name received, for the same.
        self.text_guard = TextGuard()
        #: The kind the servers said for the name's runs; an answer of another is refused.
        self.run_kind: Optional[str] = None
        # The current run: IDs next_id, next_id + stride, ... below end.
        self.next_id = 0
        self.end = 0
        self.stride = 1
        #: Taking this ID (or one past it) starts the next batch's fetch.
        self.mark = NEVER
        #: Whether the IDs carry their time (snowflake) and so expire after max_age.
        self.expiring = False
        self.expires_at = math.inf
        self.queue: Deque[_Run] = deque()
        self.texts: Deque[str] = deque()
        #: Prefetch once this few text IDs are left (-1: not for this batch).
        self.text_mark = -1
        self.kind = UNKNOWN
        self.prefetching = False
        self.closed = False
        self.pushed = 0
        self.wasted = 0
        self.fetches = 0
        self.served_direct = 0
        #: IDs fetched but never cached: the rest of a batch that showed a tso name.
        self.discarded = 0
        self.texts_taken = 0
        self.size = batch_min
        self.last_fetch: Optional[float] = None
        self.served_then = 0
        self.prefetch_at = prefetch_at
        self.hold = hold
        self.batch_min = batch_min
        self.batch_max = batch_max
        self.max_age = max_age

    # --- taking (under lock) --------------------------------------------------------

    def advance(self, now: float) -> bool:
        """Makes the next queued run current, dropping expired ones; under ``lock``. False
        when nothing is cached."""
        self._drop_current_if_expired(now)
        if self.next_id < self.end:
            return True
        queue = self.queue
        while queue:
            run = queue.popleft()
            if self.expiring and now > run.expires_at:
                self.wasted += (run.end - run.first) // run.stride
                continue
            self.next_id, self.end, self.stride = run.first, run.end, run.stride
            self.mark, self.expires_at = run.mark, run.expires_at
            return True
        self.next_id = self.end = 0
        self.mark = NEVER
        return False

    def _drop_current_if_expired(self, now: float) -> None:
        if self.expiring and self.next_id < self.end and now > self.expires_at:
            self.wasted += (self.end - self.next_id) // self.stride
            self.next_id = self.end = 0

    def take_into(self, out: List[int], n: int) -> bool:
        """Moves up to ``n - len(out)`` cached IDs into ``out``; under ``lock``. True when a
        prefetch mark was passed (the caller starts the next fetch)."""
        crossed = False
        now = time.monotonic()
        while len(out) < n and self.advance(now):
            i, stride = self.next_id, self.stride
            k = min(n - len(out), (self.end - i) // stride)
            last = i + (k - 1) * stride
            out.extend(range(i, last + 1, stride))
            self.next_id = last + stride
            if last >= self.mark:
                self.mark = NEVER
                crossed = True
        return crossed

    def take_text(self) -> Tuple[Optional[str], bool]:
        """One cached text ID, and whether the prefetch mark was passed; under ``lock``."""
        if not self.texts:
            return None, False
        text = self.texts.popleft()
        self.texts_taken += 1
        if len(self.texts) <= self.text_mark:
            self.text_mark = -1
            return text, True
        return text, False

    def has_ids(self, text: bool) -> bool:
        with self.lock:
            if text:
                return bool(self.texts)
            self._drop_current_if_expired(time.monotonic())
            return self.next_id < self.end or bool(self.queue)

    # --- filling --------------------------------------------------------------------

    def next_size(self, demand: int) -> int:
        """How many IDs the next fetch asks for, for a caller that wants at least ``demand``:
        about ``hold`` worth at the rate seen since the last fetch, within the bounds."""
        with self.lock:
            if self.last_fetch is not None:
                secs = max(time.monotonic() - self.last_fetch, 0.001)
                rate = (self._served() - self.served_then) / secs
                self.size = min(max(int(rate * self.hold), self.batch_min), self.batch_max)
            return min(max(self.size, demand), self.batch_max)

    def push_runs(self, runs: List[Tuple[int, int, int]], expiring: bool, mark_at: Optional[int]) -> None:
        """Queues fetched runs. ``mark_at``: the index, within these runs, of the ID whose
        taking starts the next fetch (None: none here)."""
        now = time.monotonic()
        expires_at = now + self.max_age if expiring else math.inf
        with self.lock:
            self.kind = NUMBERS
            if self.closed:
                n = sum(r[1] for r in runs)
                self.pushed += n
                self.wasted += n
                return
            if expiring:
                self.expiring = True
            if mark_at is not None:
                # Only the newest batch's mark counts: an older one would fetch too early.
                self.mark = NEVER
                for run in self.queue:
                    run.mark = NEVER
            offset = 0
            for first, count, stride in runs:
                mark = NEVER
                if mark_at is not None and offset <= mark_at < offset + count:
                    mark = first + (mark_at - offset) * stride
                offset += count
                self.queue.append(_Run(first, first + count * stride, stride, mark, expires_at))
                self.pushed += count

    def push_texts(self, ids: List[str]) -> None:
        with self.lock:
            self.kind = TEXT
            self.texts.extend(ids)
            self.text_mark = int(len(ids) * (1 - self.prefetch_at))
            self.pushed += len(ids)

    def fetched(self) -> None:
        """A fetch ended: the rate is measured from here."""
        with self.lock:
            self.fetches += 1
            self.last_fetch = time.monotonic()
            self.served_then = self._served()

    # --- counts ---------------------------------------------------------------------

    def _cached(self) -> int:
        n = len(self.texts)
        if self.next_id < self.end:
            n += (self.end - self.next_id) // self.stride
        for run in self.queue:
            n += (run.end - run.first) // run.stride
        return n

    def _served(self) -> int:
        return self.pushed - self._cached() - self.wasted + self.served_direct

    def stats(self) -> Stats:
        with self.lock:
            return Stats(
                served=self._served(),
                fetches=self.fetches,
                wasted=self.wasted + self.discarded,
                cached=self._cached(),
                batch=self.size,
            )

    def close(self) -> None:
        """The client is closing: what is cached is skipped for good (counted as wasted, so
        ``served`` stays what it was)."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.wasted += self._cached()
            self.queue.clear()
            self.texts.clear()
            self.next_id = self.end = 0
