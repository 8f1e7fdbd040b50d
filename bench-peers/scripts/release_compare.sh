#!/usr/bin/env bash
# One release against another (BENCHMARKS.md, "Release against release"): each commit built
# with the `dist` profile (what a deployment runs), all of their servers started side by side,
# then REPS rounds in which every binary is measured in turn on the same hot paths, the order
# turning each round so no binary is always measured first or last:
#
#   http1     one ID per HTTP request, wrk, 50 connections, bearer token (auth on, as deployed)
#   http1000  count=1000 per HTTP request, wrk, 50 connections, bearer token
#   resp      INCR on a segment tag through the RESP listener after AUTH, redis-benchmark
#   client    the binary's own snowdrift-client (its cache, prefetch and HTTP), one thread
#   generator the generator in process, one thread, a layout wide enough never to wait
#
# Servers run on SERVER_CPU and every client on CLIENT_CPU, so a server's rate is its own;
# each row also records the server's CPU time per request from /proc. With CALLGRIND=1 each
# binary's server is also run once under valgrind's callgrind for http1 and its instructions
# per request are counted (a figure other load on the machine cannot move), with the
# functions that cost the most written beside it for a diff.
#
#   bench-peers/scripts/release_compare.sh f8de7d6 v0.1.0 HEAD
#   REPS=6 DURATION=8 CALLGRIND=1 bench-peers/scripts/release_compare.sh OLD NEW
#   BUILD_ONLY=1 bench-peers/scripts/release_compare.sh OLD NEW   # build now, measure later
#
# Each commit is checked out in a worktree under target/release-compare/src/ and built there
# (one shared target dir, so dependencies that did not change build once). Commits from
# before vendor/etcd-client need protoc to build (Debian's protobuf-compiler).
# Needs wrk, redis-benchmark, taskset, curl, python3 (and valgrind for CALLGRIND=1).
# Writes raw outputs, results.tsv and summary.txt to OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: release_compare.sh COMMIT COMMIT [COMMIT...]" >&2; exit 2; }
REPS=${REPS:-4}
DURATION=${DURATION:-5}
C=${C:-50}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
WORK=$ROOT/target/release-compare
OUT=${OUT:-$WORK/$(date -u +%Y%m%dT%H%M%SZ)}
# Built binaries are kept across runs in $WORK/bin, one per commit.
mkdir -p "$OUT/raw" "$OUT/bin" "$WORK/src" "$WORK/bin"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }
for tool in wrk redis-benchmark taskset curl python3; do
    command -v "$tool" >/dev/null || { echo "release_compare.sh: $tool is missing" >&2; exit 1; }
done
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
# shellcheck source=results.sh
source "$ROOT/bench-peers/scripts/results.sh"
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
log "machine: $(nproc) vCPU, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"

# --- the binaries ---------------------------------------------------------------------------
NAMES=()
for rev in "$@"; do
    commit=$(git -C "$ROOT" rev-parse --short=9 "$rev^{commit}")
    name="$rev@$commit"
    [[ $rev == "$commit" || $rev == "${commit:0:${#rev}}" ]] && name=$commit
    src="$WORK/src/$commit"
    if [[ ! -x $WORK/bin/$commit ]]; then
        [[ -d $src ]] || git -C "$ROOT" worktree add --detach --quiet "$src" "$commit"
        log "building $name (cargo build --profile dist -p snowdrift)"
        (cd "$src" && CARGO_TARGET_DIR="$WORK/target" cargo build --quiet --profile dist -j 2 -p snowdrift) \
            >"$OUT/build-$commit.log" 2>&1 || { tail -30 "$OUT/build-$commit.log"; exit 1; }
        cp "$WORK/target/dist/snowdrift" "$WORK/bin/$commit"
    fi
    cp "$WORK/bin/$commit" "$OUT/bin/$commit"
    NAMES+=("$commit")
    log "$name: $("$OUT/bin/$commit" --version)"
done

[[ -n ${BUILD_ONLY:-} ]] && { log "built; BUILD_ONLY set, nothing measured"; exit 0; }

# --- the servers, side by side --------------------------------------------------------------
REDIS_PID=$(pgrep -x redis-server | head -1 || true)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT
declare -A HTTP RESP PID TOKEN
start() { # COMMIT [WRAPPER...]: its server on SQLite with a RESP listener and one token
    local c=$1 sd="$OUT/bin/$1" tok
    shift
    HTTP[$c]=$(free_port)
    RESP[$c]=$(free_port)
    tok=$("$sd" token create --name bench --role admin)
    TOKEN[$c]=$(sed -n 's/^ *\(sd_[A-Za-z0-9]*\)$/\1/p' <<<"$tok")
    rm -rf "$OUT/$c"; mkdir -p "$OUT/$c"
    cat >"$OUT/$c/server.toml" <<CONFIG
[server]
listen = "127.0.0.1:${HTTP[$c]}"
resp_listen = "127.0.0.1:${RESP[$c]}"

[store]
url = "sqlite://$OUT/$c/snowdrift.db"

[worker]
path = "$OUT/$c/workers"

# The hot path: 22 sequence bits (4,194,304 IDs per ms), so a request almost never waits.
[[generator]]
name = "wide"
kind = "snowflake"
bits = "time:40,worker:1,seq:22"
unit = "1ms"
epoch = "2026-01-01"

$(sed -n '/^\[\[auth.token\]\]/,/^$/p' <<<"$tok")
CONFIG
    taskset -c "$SERVER_CPU" "$@" "$sd" serve --config "$OUT/$c/server.toml" >"$OUT/raw/server-$c.log" 2>&1 &
    PIDS+=($!)
    PID[$c]=$!
    wait_http "http://127.0.0.1:${HTTP[$c]}/healthz"
    "$sd" tags create 'counter:__rand_int__' --step 1000000 --server "http://127.0.0.1:${HTTP[$c]}" --token "${TOKEN[$c]}" >/dev/null
}
for c in "${NAMES[@]}"; do start "$c"; done
log "servers on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU: $(for c in "${NAMES[@]}"; do printf '%s http %s resp %s; ' "$c" "${HTTP[$c]}" "${RESP[$c]}"; done)"

# --- one round of one binary ----------------------------------------------------------------
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
cpu_per() { # REP ROW PID TICKS_BEFORE REQUESTS
    record "$1" "$2" cpu_us_per_request "$(awk -v t="$(($(ticks "$3") - $4))" -v n="$5" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.3f", t * 1e6 / hz / n}')"
}
client() { taskset -c "$CLIENT_CPU" "$@"; }
measure() { # REP COMMIT
    local r=$1 c=$2 sd="$OUT/bin/$2" pid=${PID[$2]} url="http://127.0.0.1:${HTTP[$2]}" raw="$OUT/raw/r$1-$2" before n
    mkdir -p "$raw"
    for row in http1 http1000; do
        local q=""; [[ $row == http1000 ]] && q="?count=1000"
        before=$(ticks "$pid")
        client wrk -t 1 -c "$C" -d "${DURATION}s" --latency -H "Authorization: Bearer ${TOKEN[$c]}" "$url/v1/ids/wide$q" >"$raw/$row.txt"
        wrk_http "$r" "$c:$row" "$raw/$row.txt"
        cpu_per "$r" "$c:$row" "$pid" "$before" "$(awk '/requests in/ {print $1}' "$raw/$row.txt")"
    done
    n=$((DURATION * 100000))
    before=$(ticks "$pid")
    client redis-benchmark -p "${RESP[$c]}" -a "${TOKEN[$c]}" -t incr -c "$C" -n "$n" --csv >"$raw/resp.csv" 2>/dev/null
    record "$r" "$c:resp" req_per_s "$(tail -1 "$raw/resp.csv" | tr -d '"' | cut -d, -f2)"
    cpu_per "$r" "$c:resp" "$pid" "$before" "$n"
    client "$sd" bench --target "$url" --client wide --threads 1 --duration "${DURATION}s" --token "${TOKEN[$c]}" >"$raw/client.txt" 2>&1
    record "$r" "$c:client" ids_per_s "$(per_s "$raw/client.txt" ids IDs/s)"
    client "$sd" bench --bits time:40,worker:1,seq:22 --unit 1ms --epoch 2026-01-01 --duration "${DURATION}s" >"$raw/generator.txt" 2>&1
    # The in-process bench prints "rate  N IDs/s (...)".
    record "$r" "$c:generator" ids_per_s "$(awk '$1 == "rate" {gsub(/,/, "", $2); print $2}' "$raw/generator.txt")"
    log "round $r $c: http1 $(awk '/^Requests\/sec/ {print $2}' "$raw/http1.txt")/s, http1000 $(awk '/^Requests\/sec/ {print $2}' "$raw/http1000.txt")/s, resp $(tail -1 "$raw/resp.csv" | tr -d '"' | cut -d, -f2)/s, client $(per_s "$raw/client.txt" ids IDs/s) IDs/s, generator $(awk '$1 == "rate" {print $2}' "$raw/generator.txt") IDs/s"
}

for r in $(seq "$REPS"); do
    log "round $r/$REPS (load average $(cut -d' ' -f1 /proc/loadavg))"
    k=$(((r - 1) % ${#NAMES[@]}))
    for c in "${NAMES[@]:k}" "${NAMES[@]:0:k}"; do measure "$r" "$c"; done
done

# --- instructions per request (callgrind) ---------------------------------------------------
if [[ -n ${CALLGRIND:-} ]]; then
    command -v valgrind >/dev/null || { echo "release_compare.sh: CALLGRIND=1 needs valgrind" >&2; exit 1; }
    cleanup; PIDS=()
    for c in "${NAMES[@]}"; do
        for row in http1 http1000; do
            local_q=""; [[ $row == http1000 ]] && local_q="?count=1000"
            cg="$OUT/callgrind-$c-$row.out"
            start "$c" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$cg"
            # Counted only while wrk runs (instrumentation on, counters zeroed, a dump after):
            # startup, the token hash and the tag are left out. The dump is $cg.1.
            callgrind_control -i on "${PID[$c]}" >/dev/null
            callgrind_control -z "${PID[$c]}" >/dev/null
            client wrk -t 1 -c "$C" -d 20s -H "Authorization: Bearer ${TOKEN[$c]}" "http://127.0.0.1:${HTTP[$c]}/v1/ids/wide$local_q" >"$OUT/raw/callgrind-wrk-$c-$row.txt"
            callgrind_control -d "${PID[$c]}" >/dev/null
            callgrind_control -i off "${PID[$c]}" >/dev/null
            kill "${PID[$c]}"; wait "${PID[$c]}" 2>/dev/null || true
            n=$(awk '/requests in/ {print $1}' "$OUT/raw/callgrind-wrk-$c-$row.txt")
            # (awk stops reading early: the annotator's broken pipe is not a failure.)
            ir=$( (callgrind_annotate "$cg.1" 2>/dev/null || true) | awk '/PROGRAM TOTALS/ {gsub(/,/, "", $1); print $1; exit}')
            record 1 "$c:$row" instructions_per_request "$((ir / n))"
            (callgrind_annotate --inclusive=yes "$cg.1" 2>/dev/null || true) | head -70 >"$OUT/callgrind-$c-$row.top.txt"
            log "callgrind $c $row: $n requests, $ir instructions, $((ir / n)) per request (top functions: callgrind-$c-$row.top.txt)"
        done
    done
fi

python3 - "$RESULTS" "${NAMES[@]}" >"$OUT/summary.txt" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, row, metric, value = line.rstrip("\n").split("\t")
    if value:
        rows[(row, metric)].append(float(value))
names = sys.argv[2:]
base = names[0]
print(f"medians over rounds; ratio against {base}; every round's value after 'runs'")
for kind in ("http1", "http1000", "resp", "client", "generator"):
    for metric in ("req_per_s", "ids_per_s", "cpu_us_per_request", "p99_us", "instructions_per_request"):
        for name in names:
            vals = rows.get((f"{name}:{kind}", metric))
            if not vals:
                continue
            med = statistics.median(vals)
            ref = rows.get((f"{base}:{kind}", metric))
            ratio = f"{med / statistics.median(ref):.3f}x" if ref else "-"
            runs = " / ".join(f"{v:g}" for v in vals)
            print(f"{kind:9} {metric:24} {name:10} median {med:>14,.2f}  {ratio:>7}   runs {runs}")
EOF
log "summary:"
tee -a "$OUT/run.log" <"$OUT/summary.txt"
