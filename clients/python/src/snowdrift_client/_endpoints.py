"""The servers a client talks to, with what it knows of each.

A fetch goes to the next endpoint in turn (round-robin, so load spreads evenly and no latency
estimate can starve a server): first those whose ``/readyz`` said ready at the last look and
that have not failed lately, then those that only have not failed lately, and when every one
has failed, the one whose retry time comes first (a probe: a success brings it back).
"""

from __future__ import annotations

import functools
import http.client
import io
import random
import socket
import ssl
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Type, cast
from urllib.parse import urlsplit

from ._errors import BadRequest

#: After this many failed calls in a row an endpoint is left out until its backoff has passed.
DOWN_AFTER = 2
#: The largest answer read: a batch of 10,000 text IDs is under 1 MB, runs are tiny. More is
#: a broken server, not IDs.
MAX_BODY = 16 << 20


@dataclass(frozen=True)
class EndpointState:
    """How the client sees one endpoint (:meth:`snowdrift_client.Client.endpoints`)."""

    #: The URL as given.
    url: str
    #: False while the client avoids it: left out after failures in a row until its retry
    #: time, or its ``/readyz`` said not ready (or did not answer) at the last look.
    healthy: bool
    #: False while it is left out after failures in a row.
    up: bool
    #: What its ``/readyz`` said at the last look: True ready, False not ready or not
    #: reachable, None not asked yet.
    ready: Optional[bool]
    #: Failed calls in a row.
    failures: int
    #: The last failed call's error, None since its last success.
    last_error: Optional[str]
    #: Since when (``time.time()``) it has been left out, if it is.
    down_since: Optional[float]


def backoff(first: float, longest: float, failures: int) -> float:
    """The wait after the ``failures``-th failure in a row: ``first`` doubled each time up to
    ``longest``, with up to half of it taken off at random, so clients that failed together
    do not retry together."""
    wait = min(first * (1 << min(failures, 16)), longest)
    return wait - wait / 2 * random.random()


class _DeadlineReader(io.RawIOBase):
    """A connection's bytes for ``http.client``, each read cut at what is left of the call's
    deadline. A socket timeout alone bounds one read, not the answer: a server that sends a
    byte of the head or the body every little while (less than the timeout) would hold the
    call for as long as it likes."""

    def __init__(self, sock: socket.socket, give_up: float, file: io.BufferedReader) -> None:
        super().__init__()
        self._sock = sock
        self._give_up = give_up
        # The file http.client made of the socket, never read: while it is open the socket
        # stays open when the connection lets go of it (an answer with Connection: close
        # passes the socket to the answer so), as with http.client's own reads.
        self._file = file

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        left = self._give_up - time.monotonic()
        if left <= 0:
            raise socket.timeout("the deadline passed before the whole answer came")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _DeadlineResponse(http.client.HTTPResponse):
    """An answer whose status line, headers and body are read through a
    :class:`_DeadlineReader`: the deadline bounds them all."""

    def __init__(
        self,
        sock: socket.socket,
        debuglevel: int = 0,
        method: Optional[str] = None,
        url: Optional[str] = None,
        *,
        give_up: float,
    ) -> None:
        super().__init__(sock, debuglevel, method, url)
        self.fp = io.BufferedReader(_DeadlineReader(sock, give_up, self.fp))


class Endpoint:
    """One server: its address, a pool of kept-alive connections, and its health record."""

    def __init__(self, url: str, ca_file: Optional[str], backoff: Tuple[float, float]) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise BadRequest(
                f"endpoint {url!r}: the scheme is not http or https; write http://HOST:PORT "
                "or https://HOST:PORT"
            )
        try:
            port = parts.port
        except ValueError as e:
            raise BadRequest(f"endpoint {url!r}: {e}; write http://HOST:PORT or https://HOST:PORT")
        if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise BadRequest(
                f"endpoint {url!r} is not a server's address; write http://HOST:PORT or "
                "https://HOST:PORT (no path)"
            )
        self.url = url
        self.host = parts.hostname
        self.port = port or (443 if parts.scheme == "https" else 80)
        self.tls: Optional[ssl.SSLContext] = None
        if parts.scheme == "https":
            # The system's roots, and the private CA besides them.
            self.tls = ssl.create_default_context()
            if ca_file is not None:
                try:
                    self.tls.load_verify_locations(cafile=ca_file)
                except (OSError, ssl.SSLError) as e:
                    raise BadRequest(f"ca_file {ca_file!r} is not a readable PEM bundle: {e}")
        self._backoff = backoff
        self._lock = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []
        self.failures = 0
        #: ``time.monotonic()`` before which it is left out; 0 when it is not.
        self.retry_at = 0.0
        self.last_error: Optional[str] = None
        self.down_since: Optional[float] = None
        self.ready: Optional[bool] = None

    # --- HTTP -------------------------------------------------------------------------

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.tls is not None:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=self.tls
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, path: str, headers: Dict[str, str], timeout: float) -> Tuple[int, bytes]:
        """``GET path``: the status and body, within ``timeout`` seconds in all (connect,
        request, head and body) or an error (``OSError``, ``http.client.HTTPException``,
        ``TimeoutError``)."""
        give_up = time.monotonic() + timeout
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is not None:
            try:
                return self._exchange(conn, path, headers, give_up)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept-alive connection the server closed meanwhile (idle timeout, a
                # restart): say nothing of the server yet, try once on a new one.
                pass
        left = give_up - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer within {timeout:g} s")
        return self._exchange(self._connect(left), path, headers, give_up)

    def _exchange(
        self, conn: http.client.HTTPConnection, path: str, headers: Dict[str, str], give_up: float
    ) -> Tuple[int, bytes]:
        try:
            left = give_up - time.monotonic()
            if left <= 0:
                raise TimeoutError("no time left for the request")
            conn.timeout = left
            if conn.sock is not None:
                conn.sock.settimeout(left)
            conn.request("GET", path, headers=headers)
            # The answer is read through a reader that cuts every read at the deadline.
            conn.response_class = cast(
                Type[http.client.HTTPResponse],
                functools.partial(_DeadlineResponse, give_up=give_up),
            )
            answer = conn.getresponse()
            length = answer.getheader("content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
                raise http.client.HTTPException(
                    f"an answer of {length!r} bytes (the client reads at most {MAX_BODY})"
                )
            # With a length, read() raises IncompleteRead for a body cut short; read(n) would
            # return the part quietly.
            body = answer.read() if length is not None else answer.read(MAX_BODY + 1)
            if len(body) > MAX_BODY:
                raise http.client.HTTPException(f"an answer over {MAX_BODY} bytes")
            if time.monotonic() > give_up:
                raise TimeoutError("the answer came after the deadline")
        except socket.timeout as e:
            conn.close()
            raise TimeoutError(f"no answer within the deadline ({e})") from e
        except BaseException:
            conn.close()
            raise
        if answer.will_close:
            conn.close()
        else:
            with self._lock:
                self._idle.append(conn)
        return answer.status, body

    def close(self) -> None:
        """Closes the kept-alive connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # --- health -----------------------------------------------------------------------

    def state(self, now: float) -> EndpointState:
        with self._lock:
            up = self.retry_at <= now
            return EndpointState(
                url=self.url,
                healthy=up and self.ready is not False,
                up=up,
                ready=self.ready,
                failures=self.failures,
                last_error=self.last_error,
                down_since=self.down_since,
            )

    def succeeded(self) -> None:
        with self._lock:
            self.failures = 0
            self.retry_at = 0.0
            self.last_error = None
            self.down_since = None

    def failed(self, error: str, refused: bool = False) -> float:
        """Records a failed call; after :data:`DOWN_AFTER` in a row (at once for an answer
        that was refused as broken) it is left out for an exponential backoff with jitter.
        Returns how long to wait before trying it again."""
        with self._lock:
            if refused:
                self.failures = max(self.failures, DOWN_AFTER - 1)
            self.failures += 1
            self.last_error = error
            wait = backoff(self._backoff[0], self._backoff[1], self.failures)
            if self.failures >= DOWN_AFTER:
                if self.down_since is None:
                    self.down_since = time.time()
                self.retry_at = time.monotonic() + wait
            return wait


class Endpoints:
    """Every endpoint, the turn, and the thread that asks each one's ``/readyz``."""

    def __init__(
        self,
        urls: List[str],
        ca_file: Optional[str],
        backoff: Tuple[float, float],
        health_interval: float,
        timeout: float,
    ) -> None:
        if not urls:
            raise BadRequest(
                'no endpoint: give the servers\' URLs, e.g. endpoints=["http://10.0.0.1:8080"]'
            )
        self.list = [Endpoint(u, ca_file, backoff) for u in urls]
        self._turn = 0
        self._turn_lock = threading.Lock()
        self._stop = threading.Event()
        self._health_interval = health_interval
        self._timeout = timeout
        self._health: Optional[threading.Thread] = None

    def start_health(self) -> None:
        """Starts the thread that asks every endpoint's ``/readyz`` each ``health_interval``.
        It holds the endpoints only weakly, so a client dropped without ``close()`` does not
        keep it running."""
        if self._health_interval <= 0:
            return
        ref = weakref.ref(self)
        stop, interval = self._stop, self._health_interval
        thread = threading.Thread(
            target=_health_loop, args=(ref, stop, interval), name="snowdrift-health", daemon=True
        )
        self._health = thread
        thread.start()

    def look(self) -> None:
        """Asks each endpoint's ``/readyz`` once."""
        for e in self.list:
            if self._stop.is_set():
                return
            try:
                status, _ = e.get("/readyz", {}, min(self._timeout, self._health_interval))
                ready = status == 200
            except Exception:  # noqa: BLE001 - whatever stops an answer means not ready
                ready = False
            with e._lock:
                e.ready = ready

    def close(self) -> None:
        self._stop.set()
        for e in self.list:
            e.close()

    def pick(self) -> Endpoint:
        """The endpoint for the next call (see the module's doc for the order)."""
        n = len(self.list)
        with self._turn_lock:
            start = self._turn
            self._turn = (start + 1) % n
        now = time.monotonic()
        in_turn = [self.list[(start + k) % n] for k in range(n)]
        for e in in_turn:
            if e.retry_at <= now and e.ready is not False:
                return e
        for e in in_turn:
            if e.retry_at <= now:
                return e
        return min(self.list, key=lambda e: e.retry_at)

    def states(self) -> Tuple[EndpointState, ...]:
        now = time.monotonic()
        return tuple(e.state(now) for e in self.list)

    def describe(self) -> str:
        """Every endpoint with its last error and since when it is down, for the error of a
        call that found none to answer."""
        out = []
        now = time.time()
        for s in self.states():
            extra = ""
            if s.down_since is not None:
                extra += f", down for {max(now - s.down_since, 0.0):.1f} s"
            if s.ready is False:
                extra += ", /readyz: not ready"
            out.append(f"{s.url} ({s.last_error or 'no error yet'}{extra})")
        return "; ".join(out)


def _health_loop(ref: "weakref.ref[Endpoints]", stop: threading.Event, interval: float) -> None:
    while not stop.is_set():
        endpoints = ref()
        if endpoints is None:
            return
        endpoints.look()
        del endpoints
        stop.wait(interval)
