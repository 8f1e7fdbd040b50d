"""What the client accepts from a server, checked field by field before a single ID is held.

A server (or whatever answers at its address) is not trusted to be right: an answer that is
not JSON, is cut short, names another name, says a kind this client does not know for runs,
has no ID, more IDs than asked, a run of 0 IDs or a negative count, a stride below 1, an ID
that is not a decimal number below 2^64 or a run whose last ID passes 2^64 - 1, a run that
reaches 2^63 (no snowdrift kind issues an ID that does not fit 63 bits: segments, counters and
tickets stop at 2^63 - 1, layouts have at most 63 bits), or IDs twice in one answer, is
refused as broken: its endpoint counts as failed, and never as IDs.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

#: The largest 64-bit ID.
U64_MAX = (1 << 64) - 1
#: The largest ID a snowdrift server issues: 2^63 - 1.
MAX_ID = (1 << 63) - 1

#: The kinds whose IDs are 64-bit numbers and so come as runs with ``form=runs``.
RUN_KINDS = frozenset(["snowflake", "segment", "ticket", "counter", "tso", "zk-version"])


class Broken(Exception):
    """An answer refused as broken; the message says what the endpoint sent."""


class ServerError(Exception):
    """A well-formed error answer: ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class Runs(NamedTuple):
    """A batch of 64-bit IDs: its kind and ``(first, count, stride)`` runs."""

    kind: str
    runs: List[Tuple[int, int, int]]

    def total(self) -> int:
        return sum(r[1] for r in self.runs)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        shown = body[:60].decode("utf-8", "replace")
        raise Broken(f"a body that is not JSON ({e}; it began {shown!r})") from None


def error_of(status: int, body: bytes) -> ServerError:
    """The server's error answer, or :class:`Broken` when the body is not one."""
    value = _json(body)
    error = value.get("error") if isinstance(value, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(code, str) or not isinstance(message, str):
        raise Broken(f"status {status} without the error shape {{\"error\": {{\"code\", \"message\"}}}}")
    return ServerError(status, code, message)


def _name(value: Any, name: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise Broken(f"a JSON {type(value).__name__} where an object was expected")
    if value.get("name") != name:
        raise Broken(f"IDs of {value.get('name')!r}")
    return value


def _int(run: Dict[str, Any], key: str) -> int:
    v = run.get(key)
    # bool is an int in Python; JSON's true is no count.
    if not isinstance(v, int) or isinstance(v, bool):
        raise Broken(f"a run whose {key} is {v!r}, not a whole number")
    return v


def runs(body: bytes, name: str, asked: int) -> Runs:
    """The runs of a ``form=runs`` answer to a request for ``asked`` IDs of ``name``."""
    value = _name(_json(body), name)
    if "runs" not in value and "ids" in value:
        raise Broken("text IDs where runs were asked for")
    kind = value.get("kind")
    if not isinstance(kind, str) or kind not in RUN_KINDS:
        raise Broken(f"runs of kind {kind!r}, which is not a 64-bit kind")
    items = value.get("runs")
    if not isinstance(items, list) or not items:
        raise Broken("no runs")
    out: List[Tuple[int, int, int]] = []
    total = 0
    for run in items:
        if not isinstance(run, dict):
            raise Broken(f"a run that is {run!r}, not an object")
        first_text = run.get("first")
        if (
            not isinstance(first_text, str)
            or not (first_text.isascii() and first_text.isdigit())
            or len(first_text) > 20
        ):
            raise Broken(f"a run whose first ID is {first_text!r}, not a decimal string")
        first = int(first_text)
        count = _int(run, "count")
        stride = _int(run, "stride")
        if count < 1:
            raise Broken(f"a run of {count} IDs from {first}")
        if stride < 1:
            raise Broken(f"a run of {count} IDs from {first} with stride {stride}")
        last = first + (count - 1) * stride
        if last > U64_MAX:
            raise Broken(
                f"a run of {count} IDs from {first} with stride {stride}, which passes 2^64 - 1"
            )
        if first > MAX_ID:
            raise Broken(
                f"a run from {first}, at or above 2^63 (no snowdrift kind issues an ID that "
                "does not fit 63 bits)"
            )
        if last > MAX_ID:
            raise Broken(
                f"a run of {count} IDs from {first} with stride {stride}, whose last ID {last} "
                "passes 2^63 - 1 (no snowdrift kind issues an ID that does not fit 63 bits)"
            )
        total += count
        out.append((first, count, stride))
    if total > asked:
        raise Broken(f"{total} IDs where {asked} were asked for")
    overlap = _overlap(out)
    if overlap is not None:
        raise Broken(f"the ID {overlap} twice in one answer")
    return Runs(kind, out)


def _overlap(runs: List[Tuple[int, int, int]]) -> Optional[int]:
    """An ID two runs of one answer share, if any (answers hold a handful of runs)."""
    if len(runs) == 1:
        return None
    spans = sorted((f, f + (c - 1) * s, s, f % s if c > 1 else None) for f, c, s in runs)
    for i, (lo, hi, s, r) in enumerate(spans):
        for lo2, hi2, s2, r2 in spans[i + 1 :]:
            if lo2 > hi:
                break
            common = first_common(lo, hi, s if r is not None else 0, lo2, hi2, s2 if r2 is not None else 0)
            if common is not None:
                return common
    return None


def first_common(lo: int, hi: int, s: int, lo2: int, hi2: int, s2: int) -> Optional[int]:
    """The smallest ID in both ``lo, lo+s, ..., hi`` and ``lo2, lo2+s2, ..., hi2`` (a stride
    of 0 for a single ID), if any."""
    start, end = max(lo, lo2), min(hi, hi2)
    if start > end:
        return None
    if s == 0 or s2 == 0:
        x, (a, step) = (lo, (lo2, s2)) if s == 0 else (lo2, (lo, s))
        return x if start <= x <= end and (step == 0 or (x - a) % step == 0) else None
    # Walk the progression with the larger stride: the runs of one answer are short lists of
    # segments, so this stays small; bounded so a hostile answer cannot make it slow.
    if s < s2:
        lo, s, lo2, s2 = lo2, s2, lo, s
    x = lo + -(-(start - lo) // s) * s
    for _ in range(min(s2, 1 << 16)):
        if x > end:
            return None
        if (x - lo2) % s2 == 0:
            return x
        x += s
    return None


def texts(body: bytes, name: str, asked: int) -> List[str]:
    """The text IDs of a ``form=ids`` answer to a request for ``asked`` IDs of ``name``."""
    value = _name(_json(body), name)
    ids = value.get("ids")
    if not isinstance(ids, list) or not ids:
        raise Broken("no IDs" if "runs" not in value else "runs where text IDs were asked for")
    if len(ids) > asked:
        raise Broken(f"{len(ids)} IDs where {asked} were asked for")
    seen = set()
    for i in ids:
        if not isinstance(i, str) or not i:
            raise Broken(f"an ID that is {i!r}, not text")
        if i in seen:
            raise Broken(f"the ID {i!r} twice in one answer")
        seen.add(i)
    return ids
