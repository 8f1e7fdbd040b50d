"""What a name has received, so a server that repeats IDs is refused (as the Rust client's
guard): every 64-bit kind gives each ID of a name once across all of its servers, so a batch
that shares even one ID with an earlier batch of that name, from any endpoint, is a repeat.

Each name keeps what it received as disjoint runs grouped by ``(stride, first mod stride)``:
within a group, sorted intervals (adjacent ones merged, so one server's consecutive batches
stay one entry), found by bisection. A run is checked against every group where the
intervals meet. The check runs once per fetched batch, never per ID: the warm ``next()`` does
not touch it. Memory is bounded: past :data:`MAX_ENTRIES` intervals per name the lowest are
forgotten first (the oldest, as every kind increases per server), so only a repeat of a run
it has forgotten can pass. The first batch is taken as it comes: a server that lies from the
start, with IDs nobody else issued, is caught only when it repeats itself or another
server's IDs this client also received.

Text IDs (UUIDs, ULIDs, ObjectIds, Nano IDs, templated counters...) have no order to keep as
ranges: each name remembers the newest :data:`MAX_TEXTS` it received, exactly (a set beside
their order of arrival), and a batch holding one of them is refused the same way. The UUIDs of
``next_named`` (uuid3/uuid5: the same input gives the same UUID, by design) are not
remembered.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from typing import Deque, Dict, List, Optional, Set, Tuple

from ._answer import first_common

#: Intervals a name remembers (two ints each).
MAX_ENTRIES = 1 << 16
#: Progressions a name's IDs may come in; honest servers use a handful.
MAX_CLASSES = 1024
#: Text IDs a name remembers, the newest: a few MB for UUIDs.
MAX_TEXTS = 1 << 16

Class = Tuple[int, int]


def describe(first: int, last: int, stride: int) -> str:
    if first == last:
        return f"ID {first}"
    if stride == 1:
        return f"IDs {first}..={last}"
    return f"IDs {first}..={last} step {stride}"


class _Intervals:
    """Sorted disjoint ``[lo, hi]`` of one progression class."""

    __slots__ = ("los", "his")

    def __init__(self) -> None:
        self.los: List[int] = []
        self.his: List[int] = []

    def meeting(self, lo: int, hi: int) -> List[Tuple[int, int]]:
        """The intervals that meet ``[lo, hi]``."""
        k = bisect.bisect_right(self.his, lo - 1)
        out = []
        while k < len(self.los) and self.los[k] <= hi:
            out.append((self.los[k], self.his[k]))
            k += 1
        return out

    def insert(self, lo: int, hi: int, stride: int) -> None:
        """Adds ``[lo, hi]`` (disjoint from what is here), merged with neighbours it
        continues."""
        k = bisect.bisect_left(self.los, lo)
        if k > 0 and self.his[k - 1] + stride == lo:
            k -= 1
            lo = self.los[k]
            del self.los[k], self.his[k]
        if k < len(self.los) and hi + stride == self.los[k]:
            hi = self.his[k]
            del self.los[k], self.his[k]
        self.los.insert(k, lo)
        self.his.insert(k, hi)


class Guard:
    """One name's record of the 64-bit IDs it received."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._classes: Dict[Class, _Intervals] = {}
        self._entries = 0

    def admit(self, runs: List[Tuple[int, int, int]]) -> Optional[str]:
        """Checks a batch's runs against what was received and, when none repeats, records
        them: one step, so concurrent fetches of a name cannot both pass with the same IDs.
        Returns why it was refused, or None."""
        spans = [(f, f + (c - 1) * s, s if c > 1 else 1) for f, c, s in runs]
        with self._lock:
            for first, last, stride in spans:
                for (s2, _), intervals in self._classes.items():
                    for lo, hi in intervals.meeting(first, last):
                        if first_common(first, last, stride, lo, hi, s2) is not None:
                            return (
                                f"{describe(first, last, stride)}, which overlap IDs this client "
                                f"already received ({describe(lo, hi, s2)}): a server that "
                                "repeats IDs is refused"
                            )
            fresh = {(s, f % s) for f, _, s in spans} - set(self._classes)
            if len(self._classes) + len(fresh) > MAX_CLASSES:
                return (
                    f"IDs in more than {MAX_CLASSES} progressions (stride and remainder), "
                    "more than any server makes"
                )
            for first, last, stride in spans:
                intervals = self._classes.setdefault((stride, first % stride), _Intervals())
                before = len(intervals.los)
                intervals.insert(first, last, stride)
                self._entries += len(intervals.los) - before
            while self._entries > MAX_ENTRIES:
                self._forget_lowest()
        return None

    def _forget_lowest(self) -> None:
        key = min(
            (k for k, v in self._classes.items() if v.los), key=lambda k: self._classes[k].los[0]
        )
        intervals = self._classes[key]
        del intervals.los[0], intervals.his[0]
        self._entries -= 1
        if not intervals.los:
            del self._classes[key]


class TextGuard:
    """One name's record of the newest :data:`MAX_TEXTS` text IDs it received."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: Set[str] = set()
        self._order: Deque[str] = deque()

    def admit(self, ids: List[str]) -> Optional[str]:
        """Checks a batch's text IDs (distinct among themselves) against those received and,
        when none repeats, records them: one step, as :meth:`Guard.admit`. Returns why it
        was refused, or None."""
        with self._lock:
            for i in ids:
                if i in self._seen:
                    return (
                        f"the text ID {i!r}, which this client already received: a server "
                        "that repeats IDs is refused"
                    )
            self._seen.update(ids)
            self._order.extend(ids)
            while len(self._order) > MAX_TEXTS:
                self._seen.discard(self._order.popleft())
        return None

    def __len__(self) -> int:
        with self._lock:
            return len(self._order)
