"""KSUIDs through svix-ksuid (PyPI), a reference implementation of segmentio/ksuid, for
crates/snowdrift-core/tests/it/ksuid_reference.rs (run by scripts/id-references).

Reads KSUIDs made by snowdrift from standard input, one a line, and writes for each
    parsed TEXT SECONDS PAYLOAD_HEX AGAIN
(the Unix second and payload svix-ksuid reads from it, and its own text of what it read);
then makes COUNT KSUIDs of its own, now and at a few fixed times with fixed payloads, each
    made TEXT SECONDS PAYLOAD_HEX
and last the texts of those it made, in svix-ksuid's own order:
    sorted TEXT TEXT ...
"""

import sys
from datetime import datetime, timezone

from ksuid import Ksuid


def main() -> None:
    count = int(sys.argv[1])
    out = []
    for line in sys.stdin:
        text = line.strip()
        if not text:
            continue
        k = Ksuid.from_base62(text)
        out.append(f"parsed {text} {int(k.timestamp)} {k.payload.hex()} {k}")
    made = [Ksuid() for _ in range(count)]
    fixed = [
        (datetime(2014, 5, 13, 16, 53, 20, tzinfo=timezone.utc), bytes(16)),
        (datetime(2017, 10, 10, 4, 0, 47, tzinfo=timezone.utc), bytes.fromhex("b5a1cd34b5f99d1154fb6853345c9735")),
        (datetime(2150, 6, 19, 23, 21, 35, tzinfo=timezone.utc), b"\xff" * 16),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), bytes(range(16))),
    ]
    made += [Ksuid(datetime=when, payload=payload) for when, payload in fixed]
    for k in made:
        out.append(f"made {k} {int(k.timestamp)} {k.payload.hex()}")
    out.append("sorted " + " ".join(str(k) for k in sorted(made)))
    print("\n".join(out))


if __name__ == "__main__":
    main()
