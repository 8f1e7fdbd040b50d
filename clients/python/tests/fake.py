"""A fake server for what a real one must never do: answer garbage, or nothing at all."""

from __future__ import annotations

import socket
import threading
import time
from typing import List, Optional


class Fake:
    """Answers every ``/v1/ids`` request with ``answer`` (raw HTTP bytes; those with
    ``form=runs`` with ``runs_answer`` when given) and ``/readyz``
    with ``ready`` (200 or 503); ``stall`` seconds before answering anything; with ``drip``,
    an ID answer's first ``drip_after`` bytes at once and the rest one byte every ``drip``
    seconds. Counts the ID requests it was sent."""

    def __init__(
        self,
        answer: bytes,
        ready: int = 200,
        stall: float = 0.0,
        runs_answer: Optional[bytes] = None,
        drip: float = 0.0,
        drip_after: int = 0,
    ) -> None:
        self.answer = answer
        self.runs_answer = runs_answer
        self.ready = ready
        self.stall = stall
        self.drip = drip
        self.drip_after = drip_after
        self.id_requests = 0
        self.paths: List[str] = []
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
            except OSError:
                return
            path = data.split(b" ", 2)[1].decode()
            self.paths.append(path)
            if self.stall:
                self._stop.wait(self.stall)
            if path == "/readyz":
                body = b"{}"
                head = f"HTTP/1.1 {self.ready} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                out = head.encode() + body
            else:
                self.id_requests += 1
                runs = self.runs_answer is not None and "form=runs" in path
                out = self.runs_answer if runs and self.runs_answer is not None else self.answer
            try:
                if self.drip and path != "/readyz":
                    conn.sendall(out[: self.drip_after])
                    for k in range(self.drip_after, len(out)):
                        if self._stop.wait(self.drip):
                            return
                        conn.sendall(out[k : k + 1])
                else:
                    conn.sendall(out)
                conn.shutdown(socket.SHUT_WR)
                time.sleep(0.01)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._sock.close()


def http_answer(body: bytes, status: int = 200, length: Optional[int] = None) -> bytes:
    """A raw HTTP/1.1 answer; ``length`` other than the body's makes a truncated one."""
    n = len(body) if length is None else length
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


#: What a server answers a request for runs of a text kind.
TEXT_KIND = http_answer(
    b'{"error":{"code":"unsupported","message":"form=runs is for 64-bit IDs; uuid7 IDs are text: use form=ids"}}',
    status=409,
)
