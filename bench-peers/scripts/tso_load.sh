#!/usr/bin/env bash
# The timestamp-oracle benchmark of BENCHMARKS.md ("Strict order across nodes"): three
# `snowdrift serve` processes with one `kind = "tso"` generator on the local etcd, node 0
# leading. Servers on CPU 1, the load client on CPU 0 (taskset), REPS rounds that alternate:
#
#   A. Single IDs over HTTP, 50 connections: tso through the leader, tso through a
#      follower (forwarded over gRPC), and a snowflake generator and a segment tag on the
#      leader, for what strict order costs.
#   B. Batches of 100 over HTTP, 50 connections, the same four.
#   C. gRPC Stream through the leader (one allocation per message of 10,000).
#   D. Latency at half the rate B reached through the leader (--rate), leader and follower;
#      D2 at 5,000 requests/s of 100 (500,000 IDs/s, half the issue's goal of 1 M IDs/s).
#   F. One client process (snowdrift-client, `snowdrift bench --client`), 64 threads calling
#      next() for single tso IDs, merged by the client into shared fetches: through the
#      leader alone and through all three nodes; then at half the leader rate, for latency.
#      Each also as 64 async tasks on one runtime thread (`--tasks 64 --threads 1`).
#   E. Failover, FAILOVERS times: the leader killed with -9, then the time until a request
#      sent to a follower at that moment gets IDs (it waits on the server for the election).
#
#   bench-peers/scripts/tso_load.sh              # build, then REPS=3 rounds
#   SKIP_BUILD=1 bench-peers/scripts/tso_load.sh
#   SKIP_BUILD=1 ONLY="D2 E" bench-peers/scripts/tso_load.sh   # some parts only
#   SKIP_BUILD=1 ONLY="A F" bench-peers/scripts/tso_load.sh    # issue 30's goals
#   SKIP_BUILD=1 AUTH=1 bench-peers/scripts/tso_load.sh        # with tokens, as deployed:
#       every request carries one, followers forward with it as their forward_token
#
# Needs etcd (ETCD_URL, default etcd://127.0.0.1:2379), curl, python3, taskset. Writes every
# raw output to OUT (default target/tso-load/DATE) and prints the lines the tables are made
# from.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-5}
FAILOVERS=${FAILOVERS:-3}
ETCD_URL=${ETCD_URL:-etcd://127.0.0.1:2379}
NAME="bench_ts_$(date +%s)_$$"

# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run tso-load
PORTS=("$(free_port)" "$(free_port)" "$(free_port)")
cleanup() {
    for f in "$OUT"/pid.*; do kill "$(cat "$f")" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

TOKEN_TOML="" FORWARD="" BENCH_AUTH=() CURL_AUTH=()
if [[ -n ${AUTH:-} ]]; then
    TOKEN_OUT=$("$SD" token create --name bench --role admin)
    TOKEN=$(echo "$TOKEN_OUT" | sed -n 's/^ *\(sd_[A-Za-z0-9]*\)$/\1/p')
    TOKEN_TOML=$(echo "$TOKEN_OUT" | sed -n '/^\[\[auth.token\]\]/,/^$/p')
    # Plain http on loopback: the nodes may send the token in cleartext.
    FORWARD="forward_token = \"$TOKEN\"
forward_plaintext = true"
    BENCH_AUTH=(--token "$TOKEN")
    CURL_AUTH=(-H "Authorization: Bearer $TOKEN")
fi

start_server() { # I: node I on PORTS[I], on CPU 1
    local i=$1
    cat >"$OUT/server$i.toml" <<CONFIG
[server]
listen = "127.0.0.1:${PORTS[$i]}"

[store]
url = "sqlite://$OUT/node$i.db"

[worker]
path = "$OUT/workers$i"
id = $i

$TOKEN_TOML

[[generator]]
name = "$NAME"
kind = "tso"
insecure_coordinator = true
url = "$ETCD_URL"
$FORWARD

[[generator]]
name = "snowflake"
kind = "snowflake"
layout = "twitter"
CONFIG
    taskset -c 1 "$SD" serve --config "$OUT/server$i.toml" >>"$OUT/raw/server$i.log" 2>&1 &
    echo $! >"$OUT/pid.$i"
    wait_http "http://127.0.0.1:${PORTS[$i]}/readyz"
}
url() { echo "http://127.0.0.1:${PORTS[$1]}"; }
role() { # I: node I's role for the oracle
    curl -s "${CURL_AUTH[@]}" "$(url "$1")/v1/generators" |
        python3 -c "import json,sys; print(next(g['tso']['role'] for g in json.load(sys.stdin)['generators'] if g['name'] == '$NAME'))" 2>/dev/null ||
        echo down
}
leader() { # the index of the node that leads, waiting for one
    for _ in $(seq 300); do
        for i in 0 1 2; do [[ $(role "$i") == leader ]] && { echo "$i"; return; }; done
        sleep 0.1
    done
    echo "no leader" >&2
    return 1
}
start_server 0
L=$(leader)
start_server 1
start_server 2
F=$(( (L + 1) % 3 ))
curl -sf "${CURL_AUTH[@]}" -X POST "$(url "$L")/v1/tags" -H 'content-type: application/json' -d '{"tag": "order", "step": 1000000}' >/dev/null
log "3 nodes on ports ${PORTS[*]} (CPU 1), oracle $NAME on $ETCD_URL: leader $L, follower $F; auth $([[ -n ${AUTH:-} ]] && echo on || echo off)"

run() { # NAME ARGS...: one bench run on CPU 0, its output kept and its key lines shown
    local name=$1
    shift
    taskset -c 0 "$SD" bench "${BENCH_AUTH[@]}" "$@" >"$OUT/raw/$name.txt" 2>&1 || true
    log "$name: $(grep -E '^(ids|requests|streams|latency|errors)' "$OUT/raw/$name.txt" | tr -s ' ' | paste -sd'|')"
}
part() { # NAME: whether to run part NAME (all unless ONLY lists others)
    [[ -z ${ONLY:-} || " $ONLY " == *" $1 "* ]]
}
ids_per_s() { # NAME: the IDs/s a run reached
    sed -n 's/^ids.*(\([0-9][0-9,.]*\) IDs\/s).*/\1/p' "$OUT/raw/$1.txt" | head -1 | tr -d ,
}

part A && log "A. single IDs, 50 connections"
part A && for r in $(seq "$REPS"); do
    run "A-tso-leader-r$r" --target "$(url "$L")/v1/ids/$NAME?count=1" --connections 50 --duration "${DURATION}s"
    run "A-tso-follower-r$r" --target "$(url "$F")/v1/ids/$NAME?count=1" --connections 50 --duration "${DURATION}s"
    run "A-snowflake-r$r" --target "$(url "$L")/v1/ids/snowflake?count=1" --connections 50 --duration "${DURATION}s"
    run "A-segment-r$r" --target "$(url "$L")/v1/ids/order?count=1" --connections 50 --duration "${DURATION}s"
done

part B && log "B. batches of 100, 50 connections"
part B && for r in $(seq "$REPS"); do
    run "B-tso-leader-r$r" --target "$(url "$L")/v1/ids/$NAME?count=100" --connections 50 --duration "${DURATION}s"
    run "B-tso-follower-r$r" --target "$(url "$F")/v1/ids/$NAME?count=100" --connections 50 --duration "${DURATION}s"
    run "B-snowflake-r$r" --target "$(url "$L")/v1/ids/snowflake?count=100" --connections 50 --duration "${DURATION}s"
    run "B-segment-r$r" --target "$(url "$L")/v1/ids/order?count=100" --connections 50 --duration "${DURATION}s"
done

part C && log "C. gRPC Stream through the leader, messages of 10,000"
part C && for r in $(seq "$REPS"); do
    run "C-tso-stream-r$r" --target "$(url "$L")" --grpc "$NAME" --connections 4 --per-stream 10000000 --batch 10000 --duration "${DURATION}s"
done

if part D; then
    HALF=$(python3 -c "print(max(1, int(float('${BEST:-$(ids_per_s B-tso-leader-r1)}') / 2 / 100)))")
    log "D. latency at half of B's leader rate: $HALF requests/s of 100 IDs"
    for r in $(seq "$REPS"); do
        run "D-tso-leader-r$r" --target "$(url "$L")/v1/ids/$NAME?count=100" --connections 50 --rate "$HALF" --duration "${DURATION}s"
        run "D-tso-follower-r$r" --target "$(url "$F")/v1/ids/$NAME?count=100" --connections 50 --rate "$HALF" --duration "${DURATION}s"
    done
fi
part D2 && log "D2. latency at 5,000 requests/s of 100 IDs (500,000 IDs/s)"
part D2 && for r in $(seq "$REPS"); do
    run "D2-tso-leader-r$r" --target "$(url "$L")/v1/ids/$NAME?count=100" --connections 50 --rate 5000 --duration "${DURATION}s"
    run "D2-tso-follower-r$r" --target "$(url "$F")/v1/ids/$NAME?count=100" --connections 50 --rate 5000 --duration "${DURATION}s"
done

part F && log "F. one client process, 64 threads calling next() (single tso IDs, merged)"
part F && for r in $(seq "$REPS"); do
    run "F-client-leader-r$r" --target "$(url "$L")" --client "$NAME" --threads 64 --duration "${DURATION}s"
    run "F-client-all-r$r" --target "$(url 0),$(url 1),$(url 2)" --client "$NAME" --threads 64 --duration "${DURATION}s"
    run "F-tasks-leader-r$r" --target "$(url "$L")" --client "$NAME" --tasks 64 --threads 1 --duration "${DURATION}s"
    run "F-tasks-all-r$r" --target "$(url 0),$(url 1),$(url 2)" --client "$NAME" --tasks 64 --threads 1 --duration "${DURATION}s"
done
if part F; then
    HALF=$(python3 -c "print(max(1, int(float('${BEST_F:-$(ids_per_s F-client-leader-r1)}') / 2)))")
    HALF_T=$(python3 -c "print(max(1, int(float('${BEST_FT:-$(ids_per_s F-tasks-leader-r1)}') / 2)))")
    log "F2. latency at half of F's leader rate: $HALF IDs/s (threads), $HALF_T IDs/s (tasks)"
    for r in $(seq "$REPS"); do
        run "F2-client-leader-r$r" --target "$(url "$L")" --client "$NAME" --threads 64 --rate "$HALF" --duration "${DURATION}s"
        run "F2-tasks-leader-r$r" --target "$(url "$L")" --client "$NAME" --tasks 64 --threads 1 --rate "$HALF_T" --duration "${DURATION}s"
    done
fi

part E && log "E. failover: the leader killed with -9, a request to a follower sent at once"
part E && for k in $(seq "$FAILOVERS"); do
    L=$(leader)
    F=$(( (L + 1) % 3 ))
    sleep 1
    start=$(date +%s.%N)
    kill -9 "$(cat "$OUT/pid.$L")"
    code=$(curl -s "${CURL_AUTH[@]}" -o "$OUT/raw/E-$k.json" -w '%{http_code}' --max-time 30 "$(url "$F")/v1/ids/$NAME?count=1")
    end=$(date +%s.%N)
    log "E-$k: leader $L killed; follower $F answered $code after $(python3 -c "print(f'{$end - $start:.3f}')") s: $(cat "$OUT/raw/E-$k.json")"
    start_server "$L"
done
log "done; raw output in $OUT/raw"
