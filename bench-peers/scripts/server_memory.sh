#!/usr/bin/env bash
# The server memory benchmark of BENCHMARKS.md ("Server load", server memory): the RSS of one
# fresh `snowdrift serve` idle, with TAGS segment tags each used once, after /metrics scrapes,
# and under load over those tags while /metrics is scraped every second, as an open dashboard
# does. The goal it checks: under 64 MB under load with 10,000 tags.
#
#   bench-peers/scripts/server_memory.sh                        # target/dist/snowdrift
#   bench-peers/scripts/server_memory.sh path/to/snowdrift      # another build, for an A/B
#
# Env: PG_URL (default postgres://root@127.0.0.1/test), TAGS (10000), DURATION (10 s per
# load step), OUT (default target/server-memory/DATE). Needs the local PostgreSQL, psql,
# curl, python3, and wrk if present (the random-tag step is skipped without it). Prints
# "metric value" lines (kB, bytes, seconds, requests/s) and writes them to OUT/memory.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SD=$(realpath "${1:-$ROOT/target/dist/snowdrift}")
PG_URL=${PG_URL:-postgres://root@127.0.0.1/test}
TAGS=${TAGS:-10000}
DURATION=${DURATION:-10}
OUT=${OUT:-$ROOT/target/server-memory/$(date -u +%Y%m%dT%H%M%SZ)}
TABLE="srvmem_$(date +%s)_$$"
mkdir -p "$OUT"
: >"$OUT/memory.txt"

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    psql -q "$PG_URL" -c "DROP TABLE IF EXISTS $TABLE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
note() { echo "$1 $2" | tee -a "$OUT/memory.txt"; }

PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
server_config "$PORT" "$TABLE" "$OUT/workers" >"$OUT/server.toml"
"$SD" serve --config "$OUT/server.toml" >"$OUT/server.log" 2>&1 &
PID=$!
PIDS+=("$PID")
wait_http "$URL/readyz"
rss() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PID/status"; }
echo "snowdrift $("$SD" --version 2>/dev/null || echo "$SD"), pid $PID on $URL, table $TABLE, $TAGS tags" \
    | tee "$OUT/run.log"

sleep 2
note idle_VmRSS_kB "$(rss VmRSS)"

# Tags go in as rows of the store's table, as Leaf's are created; each is used once (one
# claim each) through 4 keep-alive connections, so each gets a buffer.
psql -q "$PG_URL" -c "INSERT INTO $TABLE (biz_tag, max_id, step, description)
    SELECT 'load-' || g, 1, 1000, 'server memory benchmark' FROM generate_series(1, $TAGS) g"
CURLS=()
per=$(((TAGS + 3) / 4))
for part in 0 1 2 3; do
    first=$((part * per + 1))
    last=$(((part + 1) * per < TAGS ? (part + 1) * per : TAGS))
    curl -sf -o /dev/null "$URL/api/segment/get/load-[$first-$last]" &
    CURLS+=("$!")
done
for pid in "${CURLS[@]}"; do wait "$pid"; done
note after_tags_VmRSS_kB "$(rss VmRSS)"

for n in 1 2 3; do
    timing=$(curl -sf -o "$OUT/metrics-$n.txt" -w '%{size_download} %{time_total}' "$URL/metrics")
    if [[ $n == 1 ]]; then
        note metrics_bytes "${timing% *}"
        note metrics_seconds "${timing#* }"
    fi
    note "after_scrape_${n}_VmRSS_kB" "$(rss VmRSS)"
done
note metrics_lines_per_tag "$(grep -c 'load-' "$OUT/metrics-1.txt" | awk -v t="$TAGS" '{printf "%.2f", $1 / t}')"

# Load: RSS sampled every 0.5 s, /metrics scraped every second throughout.
(while kill -0 "$PID" 2>/dev/null; do rss VmRSS; sleep 0.5; done) >"$OUT/rss.log" 2>/dev/null &
SAMPLER=$!
(while kill -0 "$PID" 2>/dev/null; do curl -sf -o /dev/null "$URL/metrics"; sleep 1; done) &
SCRAPER=$!
PIDS+=("$SAMPLER" "$SCRAPER")
if command -v wrk >/dev/null; then
    cat >"$OUT/random_tag.lua" <<EOF
-- Each request asks Leaf's route for a random one of the $TAGS tags.
math.randomseed(os.time())
request = function()
    return wrk.format("GET", "/api/segment/get/load-" .. math.random(1, $TAGS))
end
EOF
    wrk -t 2 -c 50 -d "${DURATION}s" --latency -s "$OUT/random_tag.lua" "$URL" >"$OUT/wrk_random_tags.txt"
    note wrk_random_tags_req_per_s "$(awk '/^Requests\/sec/ {print $2}' "$OUT/wrk_random_tags.txt")"
fi
"$SD" bench --target "$URL/v1/ids/snowflake?count=1" --connections 50 --duration "${DURATION}s" \
    >"$OUT/bench_single.txt"
"$SD" bench --target "$URL/v1/ids/wide?count=10000" --connections 4 --duration "${DURATION}s" \
    >"$OUT/bench_batch.txt"
kill "$SCRAPER" "$SAMPLER"
note load_VmRSS_max_kB "$(sort -n "$OUT/rss.log" | tail -1)"
note VmHWM_kB "$(rss VmHWM)"
note after_load_VmRSS_kB "$(rss VmRSS)"
echo "written to $OUT/memory.txt"
