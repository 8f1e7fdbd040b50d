#!/usr/bin/env bash
# The client benchmark of BENCHMARKS.md ("The client"): `snowdrift bench --client`, which
# drives snowdrift-client in its own process, against three `snowdrift serve` processes on
# one PostgreSQL segment table, all on this machine.
#
#   A. next() from a warm cache, flat out, at 1, 2, 4 and 8 threads (rounds alternate).
#   B. The client beside one gRPC call per ID (the same client with batches of 1) and one
#      HTTP request per ID (50 connections), alternating, REPS rounds.
#   C. next() latency at a steady 1,000,000 IDs/s (2 threads) for 40 s, once with the
#      servers left alone and once with one of them killed (-9) every 10 s and restarted a
#      second later; then what the cache held at the end: what a restart would skip.
#
#   bench-peers/scripts/client_load.sh             # build, then REPS=3 rounds
#   SKIP_BUILD=1 bench-peers/scripts/client_load.sh
#
# Needs the local PostgreSQL (PG_URL, default postgres://root@127.0.0.1/test), psql, curl,
# python3. Writes every raw output to OUT (default target/client-load/DATE) and prints the
# lines the tables are made from.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-5}
PG_URL=${PG_URL:-postgres://root@127.0.0.1/test}
TABLE="clientload_alloc_$(date +%s)_$$"

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run client-load
PORTS=("$(free_port)" "$(free_port)" "$(free_port)")
# Server I's process ID is in $OUT/pid.I (the killer below restarts servers in a subshell).
cleanup() {
    for f in "$OUT"/pid.*; do kill "$(cat "$f")" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql -q "$PG_URL" -c "DROP TABLE IF EXISTS $TABLE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

start_server() { # I: server I on PORTS[I], worker ID I
    local i=$1
    cat >"$OUT/server$i.toml" <<CONFIG
[server]
listen = "127.0.0.1:${PORTS[$i]}"

[store]
url = "$PG_URL"
table = "$TABLE"

[worker]
path = "$OUT/workers$i"
id = $i
CONFIG
    "$SD" serve --config "$OUT/server$i.toml" >>"$OUT/raw/server$i.log" 2>&1 &
    echo $! >"$OUT/pid.$i"
    wait_http "http://127.0.0.1:${PORTS[$i]}/readyz"
}
for i in 0 1 2; do start_server "$i"; done
A="http://127.0.0.1:${PORTS[0]}"
ALL="$A,http://127.0.0.1:${PORTS[1]},http://127.0.0.1:${PORTS[2]}"
"$SD" tags create order --step 1000000 --server "$A" >/dev/null
log "3 servers on ports ${PORTS[*]}, tag order (step 1,000,000) on PostgreSQL table $TABLE"

run() { # NAME ARGS...: one bench run, its output kept and its key lines shown
    local name=$1
    shift
    "$SD" bench "$@" >"$OUT/raw/$name.txt" 2>&1 || true
    log "$name: $(grep -E '^(ids|requests|latency|errors|cache)' "$OUT/raw/$name.txt" | tr -s ' ' | paste -sd'|')"
}

log "A. warm cache, flat out"
for r in $(seq "$REPS"); do
    for t in 1 2 4 8; do
        run "warm-t$t-r$r" --target "$ALL" --client order --threads "$t" --duration "${DURATION}s"
    done
done

log "B. the client beside one call per ID"
for r in $(seq "$REPS"); do
    run "client-r$r" --target "$A" --client order --threads 1 --duration "${DURATION}s"
    run "grpc-per-id-r$r" --target "$A" --client order --threads 1 --client-batch 1,1 --duration "${DURATION}s"
    run "http-per-id-r$r" --target "$A/v1/ids/order?count=1" --connections 50 --duration "${DURATION}s"
done

log "C. 1,000,000 IDs/s for 40 s: servers left alone, then one killed every 10 s"
run "steady-calm" --target "$ALL" --client order --threads 2 --rate 1000000 --duration 40s
(
    for k in 0 1 2; do
        sleep 9
        kill -9 "$(cat "$OUT/pid.$k")" 2>/dev/null || true
        echo "[$(date -u +%H:%M:%S.%N)] killed server $k" >>"$OUT/run.log"
        sleep 1
        start_server "$k"
        echo "[$(date -u +%H:%M:%S.%N)] server $k back" >>"$OUT/run.log"
    done
) &
KILLER=$!
run "steady-kills" --target "$ALL" --client order --threads 2 --rate 1000000 --duration 40s
wait "$KILLER" || true
log "done; raw output in $OUT/raw"
