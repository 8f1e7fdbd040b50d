#!/usr/bin/env bash
# The Rust client's ID handle beside a bare AtomicU64 fetch_add loop (BENCHMARKS.md, "The
# clients"): one `snowdrift serve` on its default store (SQLite in the run's directory),
# a segment tag with segments of 1,000,000,000, and crates/snowdrift-client's example
# handle_bench, which alternates its cases round by round: fetch_add on 1 and 2 threads,
# a handle's next() on 1 and 2 threads, next(name) on 1 and 2 threads, the async handle,
# and a handle on the snowflake generator. A second server, with limits.max_count =
# 10,000,000 (the default is 10,000), serves the handle cases that show what the server's
# message size costs the timed threads when both share the machine's CPUs.
#
#   bench-peers/scripts/client_handle.sh                      # builds both in release
#   SNOWDRIFT_BIN=target/debug/snowdrift ROUNDS=9 bench-peers/scripts/client_handle.sh
#
# The server's own speed barely matters (the client fetches batches of up to 100 M IDs a
# few times a second), so SNOWDRIFT_BIN may be any build; the client example is always a
# release build. ROUNDS (default 7), CASE_SECONDS per case and round (default 0.5); PORT
# (default: a free one). Writes the run to OUT (default target/client-handle/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${ROUNDS:-7}
CASE_SECONDS=${CASE_SECONDS:-0.5}

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
OUT=${OUT:-$ROOT/target/client-handle/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/bin" "$OUT/raw"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }
log "commit $(git -C "$ROOT" rev-parse --short HEAD); uncommitted in crates/: $(git -C "$ROOT" status --short -- crates | wc -l) file(s)"
log "machine: $(nproc) vCPU, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r); $(uptime)"
if [[ -n ${SNOWDRIFT_BIN:-} ]]; then
    cp "$SNOWDRIFT_BIN" "$OUT/bin/snowdrift"
    # The server refuses SNOWDRIFT_ variables that are not its own.
    unset SNOWDRIFT_BIN
else
    log "building the server (cargo build --release -p snowdrift)"
    (cd "$ROOT" && cargo build --release -j 2 -p snowdrift) >"$OUT/build.log" 2>&1
    cp "$ROOT/target/release/snowdrift" "$OUT/bin/"
fi
log "building the client example (cargo build --release -p snowdrift-client --example handle_bench)"
(cd "$ROOT" && cargo build --release -j 2 -p snowdrift-client --example handle_bench) >>"$OUT/build.log" 2>&1
cp "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/handle_bench" "$OUT/bin/"
SD="$OUT/bin/snowdrift"

PORT=${PORT:-$(free_port)}
cd "$OUT"
"$SD" serve --listen "127.0.0.1:$PORT" >"$OUT/raw/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait 2>/dev/null || true' EXIT
wait_http "http://127.0.0.1:$PORT/readyz"
"$SD" tags create order --step 1000000000 --server "http://127.0.0.1:$PORT" >/dev/null
log "server on port $PORT (store: $OUT/snowdrift.db), tag order with a step of 1,000,000,000"
LARGE_PORT=$(free_port)
mkdir -p "$OUT/large"
(cd "$OUT/large" && SNOWDRIFT_LIMITS__MAX_COUNT=10000000 exec "$SD" serve \
    --listen "127.0.0.1:$LARGE_PORT" >"$OUT/raw/server-large.log" 2>&1) &
LARGE=$!
trap 'kill $SERVER $LARGE 2>/dev/null || true; wait 2>/dev/null || true' EXIT
wait_http "http://127.0.0.1:$LARGE_PORT/readyz"
"$SD" tags create order --step 1000000000 --server "http://127.0.0.1:$LARGE_PORT" >/dev/null
log "second server on port $LARGE_PORT with limits.max_count = 10,000,000 (store: $OUT/large/snowdrift.db)"

"$OUT/bin/handle_bench" --endpoint "http://127.0.0.1:$PORT" --tag order \
    --large-endpoint "http://127.0.0.1:$LARGE_PORT" \
    --rounds "$ROUNDS" --seconds "$CASE_SECONDS" | tee "$OUT/raw/handle_bench.txt"
log "after: $(uptime)"
log "done; raw output in $OUT/raw"
