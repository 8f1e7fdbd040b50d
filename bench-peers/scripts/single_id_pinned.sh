#!/usr/bin/env bash
# One ID per request, with every server on CPU 1 and every client on CPU 0, so that a client
# never takes CPU time from the server it measures (BENCHMARKS.md "Server load", section 1b).
# Side by side in each round: Redis INCR and the server's RESP listener (both driven by
# redis-benchmark), and `GET /v1/ids/snowflake?count=1` (driven by wrk and by
# `snowdrift bench`); then `snowdrift bench --rate` at half the rate Redis reached in that
# round, against Redis, the RESP listener and HTTP alike, for the latency at half load. It
# also reads each server's CPU time per request, at full and at half load, and during the
# fixed-rate runs the vCPUs' steal time and how long the server waited for its CPU, from /proc.
#
#   bench-peers/scripts/single_id_pinned.sh          # build, then REPS=3 rounds of DURATION=10 s
#   SKIP_BUILD=1 bench-peers/scripts/single_id_pinned.sh
#
# Needs: 2 or more CPUs, the local Redis (127.0.0.1:6379; its process is moved to CPU 1 for
# the run and back after), redis-benchmark, wrk, taskset, curl and python3; root or the same
# user as redis-server to move it. Writes raw outputs and summary.txt to OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-10}
C=${C:-50}
REDIS_N=${REDIS_N:-1000000}   # INCRs per redis-benchmark run (about DURATION at ~100k/s)
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
OUT=${OUT:-$ROOT/target/single-id-pinned/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/raw"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }

for tool in redis-benchmark wrk taskset curl python3; do
    command -v "$tool" >/dev/null || { echo "single_id_pinned.sh: $tool is missing" >&2; exit 1; }
done
log "commit $(git -C "$ROOT" rev-parse --short HEAD); machine: $(nproc) vCPU, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r)"
if [[ -z ${SKIP_BUILD:-} ]]; then
    log "building (cargo, -j 2)"
    (cd "$ROOT" && cargo build --profile dist -j 2 -p snowdrift) >"$OUT/build.log" 2>&1
fi
cp "$ROOT/target/dist/snowdrift" "$OUT/snowdrift"
SD="$OUT/snowdrift"
client() { taskset -c "$CLIENT_CPU" "$@"; }

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
REDIS_PID=$(pgrep -x redis-server | head -1)
REDIS_MASK=$(taskset -p "$REDIS_PID" | awk '{print $NF}')
SERVER_PID=""
cleanup() {
    [[ -n $SERVER_PID ]] && { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
    taskset -a -p "$REDIS_MASK" "$REDIS_PID" >/dev/null 2>&1 || true
    redis-cli -n 9 del 'counter:__rand_int__' >/dev/null 2>&1 || true
    redis-cli del snowdrift-bench:incr >/dev/null 2>&1 || true
}
trap cleanup EXIT
taskset -a -p -c "$SERVER_CPU" "$REDIS_PID" >/dev/null

PORT=$(free_port)
RESP_PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
cat >"$OUT/server.toml" <<EOF
[server]
listen = "127.0.0.1:$PORT"
resp_listen = "127.0.0.1:$RESP_PORT"
[store]
url = "sqlite://$OUT/snowdrift.db"
[worker]
registry = "file"
path = "$OUT/workers"
EOF
taskset -c "$SERVER_CPU" "$SD" serve --config "$OUT/server.toml" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
wait_http "$URL/readyz"
# redis-benchmark's INCR key, as a tag: the RESP listener answers INCR with its IDs.
curl -sf -X POST "$URL/v1/tags" -H 'content-type: application/json' \
    -d '{"tag": "counter:__rand_int__", "step": 100000}' >/dev/null
log "servers on CPU $SERVER_CPU: redis-server pid $REDIS_PID, snowdrift serve pid $SERVER_PID ($URL, RESP $RESP_PORT); clients on CPU $CLIENT_CPU"

# CPU time (user + system, all threads) a process spends while COMMAND runs, in clock ticks,
# into FILE.cpu; /proc counts in ticks of 1/100 s, fine enough over runs of seconds.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
cpu_ms_of() { # PID FILE COMMAND...
    local pid=$1 file=$2 before
    shift 2
    before=$(cpu_ticks "$pid")
    "$@" >"$file"
    echo $(( ($(cpu_ticks "$pid") - before) * 1000 / $(getconf CLK_TCK) )) >"$file.cpu"
}

RESULTS="$OUT/results.tsv"
: >"$RESULTS"
# shellcheck source=results.sh
source "$ROOT/bench-peers/scripts/results.sh"
redis_csv() { # REP NAME FILE (redis-benchmark --csv: rps, avg, min, p50, p95, p99, max in ms)
    local line
    line=$(tail -1 "$3" | tr -d '"')
    record "$1" "$2" req_per_s "$(cut -d, -f2 <<<"$line")"
    record "$1" "$2" p50_us "$(awk -F, '{print $5 * 1000}' <<<"$line")"
    record "$1" "$2" p99_us "$(awk -F, '{print $7 * 1000}' <<<"$line")"
}
# Time the hypervisor gave the client's and the server's vCPU to others (steal, /proc/stat),
# as "CLIENT SERVER" in ticks; a fixed-rate run's tail includes these waits.
steal_ticks() { awk -v c="cpu$CLIENT_CPU" -v s="cpu$SERVER_CPU" '$1 == c {a = $9} $1 == s {b = $9} END {print a, b}' /proc/stat; }
steal_per_cpu() { # REP NAME BEFORE AFTER
    local ms=$((1000 / $(getconf CLK_TCK)))
    read -r c0 s0 <<<"$3"
    read -r c1 s1 <<<"$4"
    record "$1" "$2" client_cpu_steal_ms $(((c1 - c0) * ms))
    record "$1" "$2" server_cpu_steal_ms $(((s1 - s0) * ms))
}
# Time the threads of a process spent runnable but waiting for their CPU (the second field
# of /proc/PID/task/*/schedstat, in ns): another task held the server's CPU, and every
# request that arrived meanwhile waited too. On these VMs: kdamond, the kernel's memory-access
# monitor, for 3-5 ms at a time, and other services sharing the VM (BENCHMARKS.md).
runq_wait_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $2} END {printf "%d\n", s}'; }
cpu_per() { # REP NAME FILE REQUESTS: the server's CPU time per request
    record "$1" "$2" cpu_us_per_request "$(awk -v n="$4" '{print $1 * 1000 / n}' "$3.cpu")"
}

for rep in $(seq "$REPS"); do
    R="$OUT/raw/round$rep"
    mkdir -p "$R"
    log "round $rep/$REPS (load average $(cut -d' ' -f1 /proc/loadavg))"
    cpu_ms_of "$REDIS_PID" "$R/redis.csv" client redis-benchmark --dbnum 9 -t incr -c "$C" -n "$REDIS_N" --csv
    redis_csv "$rep" redis "$R/redis.csv"
    cpu_per "$rep" redis "$R/redis.csv" "$REDIS_N"

    cpu_ms_of "$SERVER_PID" "$R/resp.csv" client redis-benchmark -p "$RESP_PORT" -t incr -c "$C" -n "$REDIS_N" --csv
    redis_csv "$rep" resp "$R/resp.csv"
    cpu_per "$rep" resp "$R/resp.csv" "$REDIS_N"

    cpu_ms_of "$SERVER_PID" "$R/wrk.txt" client wrk -t 1 -c "$C" -d "${DURATION}s" --latency "$URL/v1/ids/snowflake?count=1"
    wrk_http "$rep" http_wrk "$R/wrk.txt"
    cpu_per "$rep" http_wrk "$R/wrk.txt" "$(awk '/requests in/ {print $1}' "$R/wrk.txt")"

    client "$SD" bench --target "$URL/v1/ids/snowflake?count=1" --connections "$C" --duration "${DURATION}s" >"$R/bench.txt"
    sd_http "$rep" http_bench "$R/bench.txt"

    # Half of Redis's rate in this round (the goal: p99 under 1 ms there), with one client
    # for all three servers, so each gets the same arrivals and the same client's tail.
    half=$(awk -F, '{gsub(/"/, ""); rate = $2} END {print int(rate / 2)}' "$R/redis.csv")
    # The order turns each round, so that no server is always the one measured last.
    rows=(redis_half resp_half http_half)
    shift_by=$(((rep - 1) % 3))
    for row in "${rows[@]:shift_by}" "${rows[@]:0:shift_by}"; do
        case $row in
            redis_half) args=(--target redis://127.0.0.1:6379 --incr snowdrift-bench:incr) ;;
            resp_half) args=(--target "redis://127.0.0.1:$RESP_PORT" --incr 'counter:__rand_int__') ;;
            http_half) args=(--target "$URL/v1/ids/snowflake?count=1") ;;
        esac
        case $row in redis_half) pid=$REDIS_PID ;; *) pid=$SERVER_PID ;; esac
        steal_before=$(steal_ticks)
        wait_before=$(runq_wait_ns "$pid")
        cpu_ms_of "$pid" "$R/$row.txt" client "$SD" bench "${args[@]}" --connections "$C" \
            --rate "$half" --duration "${DURATION}s"
        record "$rep" "$row" rate "$half"
        sd_http "$rep" "$row" "$R/$row.txt"
        # At a fixed rate the server wakes for fewer requests at a time than at full load, so
        # its CPU per request, and how busy that leaves its CPU, is measured here too.
        cpu_per "$rep" "$row" "$R/$row.txt" "$(grep '^requests ' "$R/$row.txt" | awk '{print $2}' | tr -d ,)"
        record "$rep" "$row" server_cpu_busy_pct "$(awk -v d="$DURATION" '{print $1 / (d * 10)}' "$R/$row.txt.cpu")"
        steal_per_cpu "$rep" "$row" "$steal_before" "$(steal_ticks)"
        record "$rep" "$row" server_runq_wait_ms $((($(runq_wait_ns "$pid") - wait_before) / 1000000))
    done
done

python3 - "$RESULTS" >"$OUT/summary.txt" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, row, metric, value = line.rstrip("\n").split("\t")
    if value:
        rows[(row, metric)].append(float(value))
redis = statistics.median(rows[("redis", "req_per_s")])
for (row, metric), values in rows.items():
    med = statistics.median(values)
    ratio = f"  ({med / redis:.2f}x Redis)" if metric == "req_per_s" else ""
    runs = " / ".join(f"{v:g}" for v in values)
    print(f"{row:11} {metric:20} median {med:>12,.2f}{ratio}   runs {runs}")
EOF
log "summary (medians of $REPS rounds):"
tee -a "$OUT/run.log" <"$OUT/summary.txt"
