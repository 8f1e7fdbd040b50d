"""README's Python example, run as README shows it (the block between its
``python-client.py`` markers) against a real ``snowdrift serve``: only the server's URL is
put in place of the example's."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from conftest import REPO, TOKEN, Server

EXAMPLE_URL = '"http://127.0.0.1:8080"'


def python_block() -> str:
    readme = (REPO / "README.md").read_text()
    start = readme.index("<!-- python-client.py -->")
    end = readme.index("<!-- /python-client.py -->")
    block = readme[start:end]
    return block.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_runs_as_shown(server: Server, tmp_path: Path) -> None:
    code = python_block()
    assert code.count(EXAMPLE_URL) == 1, "the example names one server"
    assert len(code.strip().splitlines()) <= 20, "a block a user copies"
    script = tmp_path / "example.py"
    script.write_text(code.replace(EXAMPLE_URL, repr(server.url)))
    env = {**os.environ, "SNOWDRIFT_TOKEN": TOKEN}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    order_id, count, text, site = first.split()
    assert int(order_id) > 0 and count == "500"
    assert uuid.UUID(text).version == 7
    assert site == str(uuid.uuid5(uuid.NAMESPACE_DNS, "python.org"))
    # The async client's ID comes after everything the first client held.
    assert int(second) > int(order_id) + 500
