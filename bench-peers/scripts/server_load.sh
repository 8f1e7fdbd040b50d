#!/usr/bin/env bash
# The server load benchmark of BENCHMARKS.md ("Server load"): `snowdrift serve` beside Redis
# INCR (redis-benchmark, also against the server's RESP listener), ferroid-tonic-server's gRPC streaming and PostgreSQL nextval
# (pgbench), all on this machine, side by side in one run, repeated REPS times; then the
# server's memory idle and with 10,000 segment tags in use (server_memory.sh).
#
#   bench-peers/scripts/server_load.sh            # build, then REPS=3 rounds of DURATION=10 s runs
#   SKIP_BUILD=1 bench-peers/scripts/server_load.sh   # reuse the binaries in target/
#
# Needs: the local PostgreSQL (PG_URL, default postgres://root@127.0.0.1/test) and Redis
# (127.0.0.1:6379), psql, pgbench, redis-benchmark, curl, python3, protoc (ferroid's client
# build), and wrk if present (a C client beside `snowdrift bench`; skipped when missing).
# Writes every raw output and a summary of medians to OUT (default target/server-load/DATE).
# The binaries are copied out of target/ first, so a rebuild by someone else mid-run does
# not change what is measured.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-10}
PG_URL=${PG_URL:-postgres://root@127.0.0.1/test}
REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}
REDIS_DB=${REDIS_DB:-9}           # redis-benchmark's key goes here, away from other tests
REDIS_N=${REDIS_N:-800000}        # INCRs per redis-benchmark run (about DURATION at ~80k/s)
OUT=${OUT:-$ROOT/target/server-load/$(date -u +%Y%m%dT%H%M%SZ)}
SUFFIX="$(date +%s)_$$"
TABLE="srvload_alloc_$SUFFIX"     # the main server's segment table
SEQ="srvload_seq_$SUFFIX"         # pgbench's sequence

mkdir -p "$OUT/bin" "$OUT/raw"
cd "$OUT"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }

log "commit $(git -C "$ROOT" rev-parse --short HEAD); uncommitted in crates/: $(git -C "$ROOT" status --short -- crates | wc -l) file(s)"
log "machine: $(nproc) vCPU, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r)"
if [[ -z ${SKIP_BUILD:-} ]]; then
    log "building (cargo, -j 2)"
    (cd "$ROOT" && cargo build --profile dist -j 2 -p snowdrift \
        && cargo build --release -j 2 -p bench-peers --features ferroid-grpc --example ferroid_grpc_load \
        && cargo install --root target/peers -j 2 ferroid-tonic-server --version 2.0.0) \
        >"$OUT/build.log" 2>&1
fi
cp "$ROOT/target/dist/snowdrift" "$ROOT/target/release/examples/ferroid_grpc_load" \
    "$ROOT/target/peers/bin/ferroid-tonic-server" "$OUT/bin/"
SD="$OUT/bin/snowdrift"
FERROID_LOAD="$OUT/bin/ferroid_grpc_load"

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    psql -q "$PG_URL" -c "DROP TABLE IF EXISTS $TABLE; DROP SEQUENCE IF EXISTS $SEQ" \
        >/dev/null 2>&1 || true
    redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" -n "$REDIS_DB" del 'counter:__rand_int__' >/dev/null 2>&1 || true
}
trap cleanup EXIT

# ---- servers ----
PORT=$(free_port)
RESP_PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
server_config "$PORT" "$TABLE" "$OUT/workers" "$RESP_PORT" >"$OUT/server.toml"
"$SD" serve --config "$OUT/server.toml" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
wait_http "$URL/readyz"
curl -sf -X POST "$URL/v1/tags" -H 'content-type: application/json' \
    -d '{"tag": "pgload", "step": 100000, "description": "server load benchmark"}' >/dev/null
# redis-benchmark's INCR key, as a tag: the server's RESP listener answers INCR with its IDs.
curl -sf -X POST "$URL/v1/tags" -H 'content-type: application/json' \
    -d '{"tag": "counter:__rand_int__", "step": 100000, "description": "redis-benchmark INCR"}' >/dev/null
log "snowdrift serve pid $SERVER_PID on $URL, RESP on $RESP_PORT (store $PG_URL table $TABLE, tags pgload and counter:__rand_int__, step 100000)"

F1_PORT=$(free_port)
"$OUT/bin/ferroid-tonic-server" --num-workers 1 --server-addr "127.0.0.1:$F1_PORT" >"$OUT/ferroid1.log" 2>&1 &
PIDS+=("$!")
F128_PORT=$(free_port)
"$OUT/bin/ferroid-tonic-server" --num-workers 128 --server-addr "127.0.0.1:$F128_PORT" >"$OUT/ferroid128.log" 2>&1 &
PIDS+=("$!")
wait_tcp "$F1_PORT"
wait_tcp "$F128_PORT"
log "ferroid-tonic-server: 1 worker on $F1_PORT, 128 workers on $F128_PORT"

psql -q "$PG_URL" -c "CREATE SEQUENCE $SEQ"
echo "SELECT nextval('$SEQ');" >"$OUT/nextval.sql"

# The main server's memory, sampled every second through all the runs.
(while kill -0 "$SERVER_PID" 2>/dev/null; do
    awk '/VmRSS|VmHWM/ {printf "%s=%s ", $1, $2} END {print ""}' "/proc/$SERVER_PID/status" 2>/dev/null
    sleep 1
done) >"$OUT/server_rss.log" &
PIDS+=("$!")

# ---- parsing: every result becomes "rep<TAB>name<TAB>metric<TAB>value" in results.tsv ----
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
# shellcheck source=results.sh
source "$ROOT/bench-peers/scripts/results.sh"

HAVE_WRK=$(command -v wrk >/dev/null && echo 1 || echo "")
C=50
for rep in $(seq "$REPS"); do
    log "round $rep of $REPS; load: $(uptime | sed 's/.*load average: //')"
    record "$rep" machine load1_start "$(cut -d' ' -f1 /proc/loadavg)"
    R="$OUT/raw/$rep"
    mkdir -p "$R"

    # 1. One ID per request, 50 connections, beside Redis INCR.
    redis-benchmark -h "$REDIS_HOST" -p "$REDIS_PORT" --dbnum "$REDIS_DB" -t incr -c "$C" -n "$REDIS_N" --csv \
        >"$R/redis_incr.csv"
    record "$rep" redis_incr req_per_s "$(awk -F'"' 'NR == 2 {print $4}' "$R/redis_incr.csv")"
    record "$rep" redis_incr p50_us "$(awk -F'"' 'NR == 2 {print $10 * 1000}' "$R/redis_incr.csv")"
    record "$rep" redis_incr p99_us "$(awk -F'"' 'NR == 2 {print $14 * 1000}' "$R/redis_incr.csv")"
    # The same client against snowdrift's RESP listener (it has no CONFIG: a warning on stderr).
    redis-benchmark -h 127.0.0.1 -p "$RESP_PORT" -t incr -c "$C" -n "$REDIS_N" --csv \
        >"$R/sd_resp_incr.csv" 2>"$R/sd_resp_incr.stderr"
    record "$rep" sd_resp_incr req_per_s "$(awk -F'"' 'NR == 2 {print $4}' "$R/sd_resp_incr.csv")"
    record "$rep" sd_resp_incr p50_us "$(awk -F'"' 'NR == 2 {print $10 * 1000}' "$R/sd_resp_incr.csv")"
    record "$rep" sd_resp_incr p99_us "$(awk -F'"' 'NR == 2 {print $14 * 1000}' "$R/sd_resp_incr.csv")"

    "$SD" bench --target "$URL/v1/ids/snowflake?count=1" --connections "$C" --duration "${DURATION}s" \
        >"$R/sd_single.txt"
    sd_http "$rep" sd_single "$R/sd_single.txt"
    "$SD" bench --target "$URL/api/segment/get/pgload" --connections "$C" --duration "${DURATION}s" \
        >"$R/sd_leaf_segment.txt"
    sd_http "$rep" sd_leaf_segment "$R/sd_leaf_segment.txt"
    if [[ -n $HAVE_WRK ]]; then
        wrk -t 2 -c "$C" -d "${DURATION}s" --latency "$URL/v1/ids/snowflake?count=1" >"$R/wrk_single.txt"
        wrk_http "$rep" wrk_single "$R/wrk_single.txt"
        wrk -t 2 -c "$C" -d "${DURATION}s" --latency "$URL/api/segment/get/pgload" >"$R/wrk_leaf_segment.txt"
        wrk_http "$rep" wrk_leaf_segment "$R/wrk_leaf_segment.txt"
    fi
    # Half the rate this round measured, latency counted from when each request was due.
    half=$(awk -F'\t' -v r="$rep" '$1 == r && $2 == "sd_single" && $3 == "req_per_s" {printf "%d", $4 / 2}' "$RESULTS")
    record "$rep" sd_single_half rate "$half"
    "$SD" bench --target "$URL/v1/ids/snowflake?count=1" --connections "$C" --rate "$half" \
        --duration "${DURATION}s" >"$R/sd_single_half.txt"
    sd_http "$rep" sd_single_half "$R/sd_single_half.txt"

    # 2. Batches: 10,000 IDs per HTTP request; gRPC streams of 1,000,000 IDs (messages of
    #    10,000, the default limits.max_count) beside ferroid's StreamIds (chunks of 4,096).
    for gen in wide snowflake; do
        "$SD" bench --target "$URL/v1/ids/$gen?count=10000" --connections 4 --duration "${DURATION}s" \
            >"$R/sd_http_batch_$gen.txt"
        sd_http "$rep" "sd_http_batch_$gen" "$R/sd_http_batch_$gen.txt"
    done
    "$SD" bench --target "$URL" --grpc wide --connections 2 --per-stream 1000000 --duration "${DURATION}s" \
        >"$R/sd_grpc_wide.txt"
    sd_stream "$rep" sd_grpc_wide "$R/sd_grpc_wide.txt"
    "$FERROID_LOAD" "http://127.0.0.1:$F128_PORT" 2 1000000 "$DURATION" >"$R/ferroid_grpc_128.txt"
    sd_stream "$rep" ferroid_grpc_128 "$R/ferroid_grpc_128.txt"
    "$SD" bench --target "$URL" --grpc snowflake --connections 2 --per-stream 1000000 --duration "${DURATION}s" \
        >"$R/sd_grpc_twitter.txt"
    sd_stream "$rep" sd_grpc_twitter "$R/sd_grpc_twitter.txt"
    "$FERROID_LOAD" "http://127.0.0.1:$F1_PORT" 2 1000000 "$DURATION" >"$R/ferroid_grpc_1.txt"
    sd_stream "$rep" ferroid_grpc_1 "$R/ferroid_grpc_1.txt"

    # 3. Segment kind on PostgreSQL through the server beside nextval, 50 clients each.
    pgbench -n -M prepared -f "$OUT/nextval.sql" -c "$C" -j 2 -T "$DURATION" "$PG_URL" >"$R/pgbench.txt" 2>&1
    record "$rep" pg_nextval req_per_s "$(awk '/^tps/ {print $3}' "$R/pgbench.txt")"
    record "$rep" pg_nextval latency_avg_us "$(awk '/^latency average/ {print $4 * 1000}' "$R/pgbench.txt")"
    "$SD" bench --target "$URL/v1/ids/pgload?count=1" --connections "$C" --duration "${DURATION}s" \
        >"$R/sd_segment_v1.txt"
    sd_http "$rep" sd_segment_v1 "$R/sd_segment_v1.txt"

    record "$rep" machine load1_end "$(cut -d' ' -f1 /proc/loadavg)"
done
# Nothing scraped /metrics during the rounds (a scrape drains the exporter's histograms).
record all server_main VmHWM_kB "$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")"
record all server_main VmRSS_max_sampled_kB "$(grep -o 'VmRSS:=[0-9]*' "$OUT/server_rss.log" | cut -d= -f2 | sort -n | tail -1)"
curl -s "$URL/metrics" | grep -E '^snowdrift_segment_refills_total|^snowdrift_ids_issued_total' >"$OUT/server_metrics.txt" || true
sleep 1
record all server_main after_scrape_VmRSS_kB "$(awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status")"

# 4. Memory: a fresh server; idle; then 10,000 tags, each used; then load spread over them
#    while /metrics is scraped every second.
log "memory: a fresh server, then 10,000 tags (server_memory.sh)"
PG_URL="$PG_URL" DURATION="$DURATION" OUT="$OUT/memory" \
    "$ROOT/bench-peers/scripts/server_memory.sh" "$SD" >"$OUT/memory.log" 2>&1
while read -r metric value; do
    record all server_mem "$metric" "$value"
done <"$OUT/memory/memory.txt"
if [[ -f $OUT/memory/wrk_random_tags.txt ]]; then
    wrk_http all mem_wrk_random_tags "$OUT/memory/wrk_random_tags.txt"
fi
sd_http all mem_sd_single "$OUT/memory/bench_single.txt"
sd_http all mem_sd_http_batch "$OUT/memory/bench_batch.txt"

# ---- summary: the median of the rounds for each name and metric ----
python3 - "$RESULTS" >"$OUT/summary.txt" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    rep, name, metric, value = line.rstrip("\n").split("\t")
    key = (name, metric)
    if key not in rows:
        order.append(key)
    try:
        rows[key].append(float(value))
    except ValueError:
        rows[key].append(float("nan"))
for name, metric in order:
    values = rows[(name, metric)]
    shown = " ".join(f"{v:.6g}" for v in values)
    print(f"{name:24} {metric:28} median {statistics.median(values):>14.6g}   runs: {shown}")
EOF
log "done: $OUT/summary.txt"
cat "$OUT/summary.txt"
