#!/usr/bin/env bash
# One ID per HTTP request for each kind of issue 29 beside snowflake, on one server in one
# run (BENCHMARKS.md "Server load", "The kinds of issue 29 over HTTP"): the mastodon layout,
# TypeID, KSUID, xid, Nano ID, cuid2, and a segment tag with a dated template beside a plain
# one (SQLite store), with uuid7 and ulid for reference. `snowdrift bench --target
# URL/v1/ids/NAME` for every generator below, REPS rounds of DURATION seconds each, the order
# of the kinds turned each round so no kind is always measured last. The server runs on
# SERVER_CPU and the client on CLIENT_CPU, so the client never takes the server's CPU; the
# server's CPU time per request is read from /proc. Prints the medians and each kind's rate
# over snowflake's.
#
#   bench-peers/scripts/kinds_http.sh                # build (release), then REPS=3 rounds
#   SKIP_BUILD=1 DURATION=5 bench-peers/scripts/kinds_http.sh
#
# Needs: 2 or more CPUs, taskset, curl and python3. Writes raw outputs and summary.txt to OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-5}
C=${C:-50}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
KINDS=(snowflake mastodon uuid7 ulid typeid ksuid xid nanoid cuid2 segment dated)

for tool in taskset curl python3; do
    command -v "$tool" >/dev/null || { echo "kinds_http.sh: $tool is missing" >&2; exit 1; }
done
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run kinds-http
RESULTS="$OUT/results.tsv"
: >"$RESULTS"
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; }

SERVER_PID=""
cleanup() {
    [[ -n $SERVER_PID ]] && { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
}
trap cleanup EXIT

PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
cat >"$OUT/server.toml" <<EOF
[server]
listen = "127.0.0.1:$PORT"
[store]
url = "sqlite://$OUT/snowdrift.db"
[worker]
registry = "file"
path = "$OUT/workers"
[[generator]]
name = "snowflake"
kind = "snowflake"
layout = "twitter"
[[generator]]
name = "uuid7"
kind = "uuid7"
[[generator]]
name = "ulid"
kind = "ulid"
[[generator]]
name = "typeid"
kind = "typeid"
prefix = "user"
[[generator]]
name = "ksuid"
kind = "ksuid"
[[generator]]
name = "mastodon"
kind = "snowflake"
layout = "mastodon"
secret = "5f1e0c9a27b34d6e8a91c2d3e4f50617"
[[generator]]
name = "xid"
kind = "xid"
[[generator]]
name = "nanoid"
kind = "nanoid"
[[generator]]
name = "cuid2"
kind = "cuid2"
EOF
taskset -c "$SERVER_CPU" "$SD" serve --config "$OUT/server.toml" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
wait_http "$URL/readyz"
# Two segment tags with the same step: one plain, one whose numbers restart each day.
for body in '{"tag": "segment", "step": 100000}' \
    '{"tag": "dated", "step": 100000, "template": "ORD{date:%Y%m%d}{seq:010}"}'; do
    curl -fsS -XPOST "$URL/v1/tags" -H 'content-type: application/json' -d "$body" >/dev/null
done
log "snowdrift serve pid $SERVER_PID on CPU $SERVER_CPU ($URL); client on CPU $CLIENT_CPU; $C connections, ${DURATION} s a row"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

for rep in $(seq "$REPS"); do
    R="$OUT/raw/round$rep"
    mkdir -p "$R"
    log "round $rep/$REPS (load average $(cut -d' ' -f1 /proc/loadavg))"
    shift_by=$(((rep - 1) % ${#KINDS[@]}))
    for kind in "${KINDS[@]:shift_by}" "${KINDS[@]:0:shift_by}"; do
        before=$(cpu_ticks "$SERVER_PID")
        taskset -c "$CLIENT_CPU" "$SD" bench --target "$URL/v1/ids/$kind" --connections "$C" \
            --duration "${DURATION}s" >"$R/$kind.txt"
        ticks=$(($(cpu_ticks "$SERVER_PID") - before))
        requests=$(awk '/^requests / {gsub(",", "", $2); print $2}' "$R/$kind.txt")
        rate=$(sed -n 's/^requests .*(\([0-9,.]*\) requests\/s).*/\1/p' "$R/$kind.txt" | tr -d ,)
        p99=$(sed -n 's/.*p99 \([^ ]*\) .*/\1/p' "$R/$kind.txt" | head -1)
        record "$rep" "$kind" req_per_s "$rate"
        record "$rep" "$kind" p99 "$p99"
        record "$rep" "$kind" cpu_us_per_request "$(awk -v t="$ticks" -v n="$requests" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t * 1e6 / hz / n}')"
        if ! grep -q '^requests .*, 0 error(s)' "$R/$kind.txt"; then log "$kind: $(grep '^requests ' "$R/$kind.txt")"; fi
    done
done

python3 - "$RESULTS" >"$OUT/summary.txt" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, kind, metric, value = line.rstrip("\n").split("\t")
    if value:
        rows[(kind, metric)].append(value)
def median(kind, metric):
    return statistics.median(float(v) for v in rows[(kind, metric)])
base = median("snowflake", "req_per_s")
print(f"{'kind':10} {'requests/s (median)':>20} {'x snowflake':>12} {'CPU us/request':>15}   runs (requests/s) | p99")
for kind in dict.fromkeys(k for k, _ in rows):
    rate = median(kind, "req_per_s")
    cpu = median(kind, "cpu_us_per_request")
    runs = " / ".join(f"{float(v):,.0f}" for v in rows[(kind, "req_per_s")])
    p99 = " / ".join(rows[(kind, "p99")])
    print(f"{kind:10} {rate:>20,.0f} {rate / base:>12.2f} {cpu:>15.2f}   {runs} | {p99}")
EOF
log "summary (medians of $REPS rounds):"
tee -a "$OUT/run.log" <"$OUT/summary.txt"
