#!/usr/bin/env bash
# `kind = "zk-version"` beside segment mode on the same ZooKeeper (BENCHMARKS.md, "zk-version
# beside the segment store"): one server whose segment store is that ZooKeeper, with a tag
# `seg` and a zk-version generator `zv`. Rounds alternate the two, each `snowdrift bench`
# (CONNECTIONS connections, closed loop) for DURATION, with 1 ID and with 100 IDs a request.
# zk-version writes the znode once per ID; a segment writes ZooKeeper once per segment.
#
#   bench-peers/scripts/zk_version.sh            # build, then run
#   SKIP_BUILD=1 ROUNDS=3 DURATION=5s bench-peers/scripts/zk_version.sh
#
# Needs python3, curl and ZooKeeper at 127.0.0.1:2181 (scripts/services starts it). Writes
# raw output to OUT (default target/zk-version/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run zk-version
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-10}

PORT=$(free_port)
TABLE="bench_zkv_$(date +%s)"
cat >"$OUT/server.toml" <<CONFIG
[server]
listen = "127.0.0.1:$PORT"

[store]
url = "zookeeper://127.0.0.1:2181"
table = "$TABLE"

[worker]
path = "$OUT/workers"

[[generator]]
name = "zv"
kind = "zk-version"
url = "zookeeper://127.0.0.1:2181"
znode = "/$TABLE/versions"
CONFIG
"$SD" serve --config "$OUT/server.toml" >"$OUT/raw/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
wait_http "http://127.0.0.1:$PORT/healthz"
"$SD" tags --server "http://127.0.0.1:$PORT" create seg --step 1000 >/dev/null

for round in $(seq "$ROUNDS"); do
    for count in 1 100; do
        for name in zv seg; do
            f="$OUT/raw/$name-$count-$round.txt"
            "$SD" bench --target "http://127.0.0.1:$PORT/v1/ids/$name?count=$count" \
                --connections "$CONNECTIONS" --duration "$DURATION" >"$f" 2>&1
            log "round $round, $name, $count per request: $(grep -E '^ids ' "$f" | head -1)"
        done
    done
done

python3 - "$OUT/raw" <<'PY' | tee -a "$OUT/run.log"
import pathlib, re, statistics, sys
d = pathlib.Path(sys.argv[1])
def rate(f):
    m = re.search(r"^ids\s+[\d,]+\D+([\d,.]+) IDs/s", f.read_text(), re.M)
    return float(m.group(1).replace(",", "")) if m else float("nan")
for count in (1, 100):
    zv = [rate(f) for f in sorted(d.glob(f"zv-{count}-*.txt"))]
    seg = [rate(f) for f in sorted(d.glob(f"seg-{count}-*.txt"))]
    print(f"{count:>3} per request: zk-version median {statistics.median(zv):,.0f} IDs/s "
          f"({min(zv):,.0f}-{max(zv):,.0f}); segment on the same ZooKeeper median "
          f"{statistics.median(seg):,.0f} ({min(seg):,.0f}-{max(seg):,.0f}); "
          f"ratio {statistics.median(seg) / statistics.median(zv):,.0f}x")
PY
