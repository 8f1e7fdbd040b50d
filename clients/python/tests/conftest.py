"""Real ``snowdrift serve`` processes for the tests, from ``$SNOWDRIFT_BIN`` (default: the
workspace's ``target/debug/snowdrift``), on ports from ``$SNOWDRIFT_PY_PORTS`` (default
18310-18399)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[3]
TOKEN = "py-test-token"
#: The tso generator's name, on the local etcd: one of this run's own, so servers of other
#: runs on the same etcd are not taken for its leader.
TSO = f"pyts-{os.getpid()}"

_ports = iter(range(*map(int, os.environ.get("SNOWDRIFT_PY_PORTS", "18310-18400").split("-"))))


def free_port() -> int:
    """A port of the range that nothing listens on now."""
    for port in _ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port left in SNOWDRIFT_PY_PORTS")


def binary() -> str:
    path = os.environ.get("SNOWDRIFT_BIN") or str(REPO / "target" / "debug" / "snowdrift")
    if not os.access(path, os.X_OK):
        pytest.fail(
            f"no snowdrift binary at {path}: build it (cargo build -p snowdrift) or set SNOWDRIFT_BIN",
            pytrace=False,
        )
    return path


def server_env() -> Dict[str, str]:
    """The environment without SNOWDRIFT_ variables: the server refuses one that names no
    config key, SNOWDRIFT_BIN included."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNOWDRIFT_")}
    env["SNOWDRIFT_LOG"] = "warn"
    return env


class Server:
    """One ``snowdrift serve`` process; ``start()`` again after ``kill()`` brings it back on
    the same port and store."""

    def __init__(
        self,
        home: Path,
        store: Path,
        tso: bool = False,
        tls: Optional[Tuple[Path, Path]] = None,
        token: bool = True,
    ) -> None:
        self.home = home
        self.port = free_port()
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        lines = [
            "[server]",
            f'listen = "127.0.0.1:{self.port}"',
            'shutdown_timeout = "0s"',
            "[store]",
            f'url = "sqlite://{store}"',
            "[worker]",
            'registry = "file"',
            f'path = "{store.parent / "workers"}"',
            "[[generator]]",
            'name = "flake"',
            'kind = "snowflake"',
            "[[generator]]",
            'name = "u7"',
            'kind = "uuid7"',
            "[[generator]]",
            'name = "u5"',
            'kind = "uuid5"',
            'namespace = "dns"',
            # The names README's example asks for.
            "[[generator]]",
            'name = "uuid7"',
            'kind = "uuid7"',
            "[[generator]]",
            'name = "site"',
            'kind = "uuid5"',
            'namespace = "dns"',
        ]
        if tso:
            lines += [
                "[[generator]]",
                f'name = "{TSO}"',
                'kind = "tso"',
                "insecure_coordinator = true",
                'url = "etcd://127.0.0.1:2379"',
                f'forward_token = "{TOKEN}"',
                "forward_plaintext = true",
            ]
        if tls:
            lines.insert(3, f'tls_cert = "{tls[0]}"')
            lines.insert(4, f'tls_key = "{tls[1]}"')
        if token:
            digest = hashlib.sha256(TOKEN.encode()).hexdigest()
            lines += [
                "[[auth.token]]",
                'name = "tests"',
                f'hash = "sha256:{digest}"',
                'generators = ["*"]',
                'role = "admin"',
            ]
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / f"server-{self.port}.toml"
        self.config.write_text("\n".join(lines) + "\n")
        self.log = home / f"server-{self.port}.log"
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.ca: Optional[Path] = None

    def start(self) -> "Server":
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [binary(), "serve", "--config", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=server_env(),
            )
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up:
            if self.process.poll() is not None:
                raise RuntimeError(f"snowdrift serve exited: {self.log.read_text()[-2000:]}")
            try:
                if self.get("/readyz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"snowdrift serve not ready within 60 s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """Kill -9: no goodbye to the clients."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def get(self, path: str, token: Optional[str] = TOKEN) -> Tuple[int, str]:
        request = urllib.request.Request(self.url + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=5, context=self._context()) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def _context(self) -> Optional[ssl.SSLContext]:
        return None if self.ca is None else ssl.create_default_context(cafile=str(self.ca))

    def create_tag(self, tag: str, step: int = 1000) -> None:
        request = urllib.request.Request(
            self.url + "/v1/tags",
            data=json.dumps({"tag": tag, "step": step}).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            urllib.request.urlopen(request, timeout=5, context=self._context()).close()
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise

    def requests(self, status: str) -> int:
        """ID requests this server answered with ``status`` (from its /metrics)."""
        _, text = self.get("/metrics", token=None)
        pattern = (
            r'^snowdrift_request_duration_seconds_count\{route="/v1/ids/\{name\}",'
            r'method="GET",status="' + status + r'"\} (\d+)'
        )
        return sum(int(m) for m in re.findall(pattern, text, re.M))


class Cluster:
    """Servers on one SQLite store, their workers leased from one directory."""

    def __init__(self, home: Path, n: int, tso: bool = False) -> None:
        store = home / "ids.db"
        self.servers = [Server(home / f"s{k}", store, tso=tso) for k in range(n)]

    def start(self) -> "Cluster":
        for s in self.servers:
            s.start()
        self.servers[0].create_tag("order")
        return self

    @property
    def urls(self) -> List[str]:
        return [s.url for s in self.servers]

    def stop(self) -> None:
        for s in self.servers:
            s.kill()


@pytest.fixture(scope="session")
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="snowdrift-py-") as d:
        yield Path(d)


@pytest.fixture(scope="session")
def server(home: Path) -> Iterator[Server]:
    """One server for the whole session: tag ``order``, ``flake``, ``u7``, ``u5`` and the
    tso ``pyts``, auth on (token :data:`TOKEN`)."""
    s = Server(home / "main", home / "main" / "ids.db", tso=True).start()
    s.create_tag("order")
    yield s
    s.kill()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Two servers of their own on one store, for tests that kill them."""
    c = Cluster(tmp_path, 2).start()
    yield c
    c.stop()


def settings(**more: Any) -> Dict[str, Any]:
    """Client settings that keep tests quick: short backoff and deadline."""
    base: Dict[str, Any] = {"token": TOKEN, "deadline": 2.0, "backoff": (0.02, 0.2)}
    base.update(more)
    return base
