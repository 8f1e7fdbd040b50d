#!/usr/bin/env bash
# Auth on beside auth off beside Redis (BENCHMARKS.md, "Server load with auth on"): one
# `snowdrift serve` without tokens and one with a token, each with a RESP listener, loaded
# by the same client (`snowdrift bench`) at 50 connections in turn, REPS rounds. As in
# single_id_pinned.sh, the servers (Redis included, moved for the run and back after) run on
# SERVER_CPU and the client on CLIENT_CPU, so that a server's rate is its own, not what is
# left of a CPU it shares with the client:
#
#   Redis INCR | RESP INCR, auth off | RESP INCR after AUTH | HTTP single ID, auth off |
#   HTTP single ID with a bearer token | HTTPS single ID with a bearer token (a third server
#   with a self-signed certificate, as deployed beyond loopback) | gRPC Stream, auth off |
#   gRPC Stream with metadata
#
#   bench-peers/scripts/auth_load.sh            # build, then REPS=3 rounds of DURATION=5 s
#   SKIP_BUILD=1 bench-peers/scripts/auth_load.sh
#   SKIP_BUILD=1 ONLY_C_CLIENTS=1 bench-peers/scripts/auth_load.sh   # only the C-client rows
#
# Each round also runs redis-benchmark (Redis INCR, and the RESP listeners' INCR with and
# without AUTH) and wrk (HTTP, auth off and on) when both are installed (C_CLIENTS= skips
# them).
#
# Needs taskset (and root or Redis's user, to move redis-server), Redis on 127.0.0.1:6379 (its key snowdrift_authload_bench is deleted at the end), curl,
# openssl, python3. Writes every raw
# output to OUT (default target/auth-load/DATE) and prints the lines the table is made from.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${REPS:-3}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-50}
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run auth-load
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
REDIS_PID=$(pgrep -x redis-server | head -1)
REDIS_MASK=$(taskset -p "$REDIS_PID" | awk '{print $NF}')
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    taskset -a -p "$REDIS_MASK" "$REDIS_PID" >/dev/null 2>&1 || true
    redis-cli del snowdrift_authload_bench >/dev/null 2>&1 || true
}
trap cleanup EXIT
taskset -a -p -c "$SERVER_CPU" "$REDIS_PID" >/dev/null

# Admin, so it can also create the RESP listener's tag; the role costs nothing per request.
TOKEN_OUT=$("$SD" token create --name bench --role admin)
TOKEN=$(echo "$TOKEN_OUT" | sed -n 's/^ *\(sd_[A-Za-z0-9]*\)$/\1/p')
TOKEN_TOML=$(echo "$TOKEN_OUT" | sed -n '/^\[\[auth.token\]\]/,/^$/p')

start() { # NAME EXTRA_TOML [SERVER_TOML]: a server on SQLite with a RESP listener; sets
          # HTTP_NAME, RESP_NAME
    local name=$1 http resp scheme=http
    http=$(free_port)
    resp=$(free_port)
    cat >"$OUT/$name.toml" <<CONFIG
[server]
listen = "127.0.0.1:$http"
resp_listen = "127.0.0.1:$resp"
${3:-}

[store]
url = "sqlite://$OUT/$name.db"

[worker]
path = "$OUT/workers-$name"

[[generator]]
name = "wide"
kind = "snowflake"
bits = "time:40,worker:1,seq:22"
unit = "1ms"
epoch = "2026-01-01"

$2
CONFIG
    taskset -c "$SERVER_CPU" "$SD" serve --config "$OUT/$name.toml" >"$OUT/raw/server-$name.log" 2>&1 &
    PIDS+=($!)
    [[ -n ${3:-} ]] && scheme=https
    wait_http "$scheme://127.0.0.1:$http/healthz"
    printf -v "HTTP_$name" '%s' "$http"
    printf -v "RESP_$name" '%s' "$resp"
}
start off ""
PID_off=${PIDS[-1]}
start on "$TOKEN_TOML"
PID_on=${PIDS[-1]}
# A self-signed end-entity certificate (openssl's default one says CA:TRUE, which rustls
# refuses as a server's certificate).
printf '[req]\ndistinguished_name = dn\nx509_extensions = leaf\n[dn]\n[leaf]\nsubjectAltName = DNS:localhost\nbasicConstraints = critical, CA:FALSE\n' >"$OUT/openssl.cnf"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -config "$OUT/openssl.cnf" \
    -keyout "$OUT/key.pem" -out "$OUT/cert.pem" 2>/dev/null
start tls "$TOKEN_TOML" "tls_cert = \"$OUT/cert.pem\"
tls_key = \"$OUT/key.pem\""

# The tags RESP INCR takes IDs of, on each server (redis-benchmark's INCR key too).
for tag in authload 'counter:__rand_int__'; do
    "$SD" tags create "$tag" --step 1000000 --server "http://127.0.0.1:$HTTP_off" >/dev/null
    "$SD" tags create "$tag" --step 1000000 --server "http://127.0.0.1:$HTTP_on" --token "$TOKEN" >/dev/null
done
log "servers: auth off on $HTTP_off (RESP $RESP_off), auth on on $HTTP_on (RESP $RESP_on)"
# The C clients' rows count only if their requests are served: INCR after AUTH gives a number,
# without AUTH a refusal.
redis-cli -p "$RESP_on" -a "$TOKEN" --no-auth-warning incr 'counter:__rand_int__' | grep -Eq '^[0-9]+$' ||
    { echo "auth_load.sh: INCR after AUTH on the RESP listener did not give an ID" >&2; exit 1; }
redis-cli -p "$RESP_on" incr 'counter:__rand_int__' | grep -q NOAUTH ||
    { echo "auth_load.sh: INCR without AUTH was not refused" >&2; exit 1; }

run() { # NAME ARGS...
    local name=$1
    shift
    taskset -c "$CLIENT_CPU" "$SD" bench "$@" >"$OUT/raw/$name.txt" 2>&1 || true
    log "$name: $(grep -E '^(requests|ids|latency|streams)' "$OUT/raw/$name.txt" | tr -s ' ' | paste -sd'|')"
}

# The same comparison with C clients as efficient as each other: redis-benchmark for Redis,
# wrk for HTTP with and without the bearer token (snowdrift bench spends more of its own CPU
# per HTTP request than per RESP one, so with it as the client for both the HTTP rows measure
# the client too).
# The server's CPU time (all threads, user + system) per request over a run, in µs: what a
# request costs the server whatever the client's own speed. `ticks PID` reads it in 1/100 s.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
per_request() { # PID TICKS_BEFORE REQUESTS
    awk -v t="$(( $(ticks "$1") - $2 ))" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t * 1e6 / hz / n}'
}
c_clients() { # ROUND
    local r=$1 line before port pid auth name
    before=$(ticks "$REDIS_PID")
    taskset -c "$CLIENT_CPU" redis-benchmark -t incr -c "$C" -n "$REDIS_N" --csv >"$OUT/raw/redis-benchmark-r$r.csv" 2>&1
    line=$(tail -1 "$OUT/raw/redis-benchmark-r$r.csv" | tr -d '"')
    log "redis-benchmark-r$r: $(cut -d, -f2 <<<"$line") requests/s, p50 $(cut -d, -f5 <<<"$line") ms, p99 $(cut -d, -f7 <<<"$line") ms, server CPU $(per_request "$REDIS_PID" "$before" "$REDIS_N") us/request"
    for side in off on; do
        port=RESP_$side
        pid=$PID_off
        auth=()
        if [[ $side == on ]]; then
            pid=$PID_on
            auth=(-a "$TOKEN")
        fi
        before=$(ticks "$pid")
        taskset -c "$CLIENT_CPU" redis-benchmark -p "${!port}" "${auth[@]}" -t incr -c "$C" -n "$REDIS_N" --csv >"$OUT/raw/resp-benchmark-$side-r$r.csv" 2>&1
        line=$(tail -1 "$OUT/raw/resp-benchmark-$side-r$r.csv" | tr -d '"')
        log "resp-benchmark-$side-r$r: $(cut -d, -f2 <<<"$line") requests/s, p50 $(cut -d, -f5 <<<"$line") ms, p99 $(cut -d, -f7 <<<"$line") ms, server CPU $(per_request "$pid" "$before" "$REDIS_N") us/request"
    done
    for side in off on; do
        port=HTTP_$side
        pid=$PID_off
        auth=()
        if [[ $side == on ]]; then
            pid=$PID_on
            auth=(-H "Authorization: Bearer $TOKEN")
        fi
        name="wrk-$side-r$r"
        before=$(ticks "$pid")
        taskset -c "$CLIENT_CPU" wrk -t 1 -c "$C" -d "$D" --latency "${auth[@]}" "http://127.0.0.1:${!port}/v1/ids/wide" >"$OUT/raw/$name.txt"
        log "$name: $(awk '/Requests\/sec/ {print $2}' "$OUT/raw/$name.txt") requests/s, $(grep -c 'Non-2xx' "$OUT/raw/$name.txt") non-2xx lines, server CPU $(per_request "$pid" "$before" "$(awk '/requests in/ {print $1}' "$OUT/raw/$name.txt")") us/request"
    done
}

D="${DURATION}s"
C=$CONNECTIONS
REDIS_N=${REDIS_N:-$((DURATION * 100000))}
for r in $(seq "$REPS"); do
    if [[ -n ${C_CLIENTS-1} ]] && command -v wrk >/dev/null && command -v redis-benchmark >/dev/null; then
        c_clients "$r"
    fi
    [[ -n ${ONLY_C_CLIENTS:-} ]] && continue
    run "redis-r$r" --target "redis://127.0.0.1:6379" --incr "snowdrift_authload_bench" --connections "$C" --duration "$D"
    run "resp-off-r$r" --target "redis://127.0.0.1:$RESP_off" --incr authload --connections "$C" --duration "$D"
    run "resp-on-r$r" --target "redis://127.0.0.1:$RESP_on" --incr authload --connections "$C" --duration "$D" --token "$TOKEN"
    run "http-off-r$r" --target "http://127.0.0.1:$HTTP_off/v1/ids/wide" --connections "$C" --duration "$D"
    run "http-on-r$r" --target "http://127.0.0.1:$HTTP_on/v1/ids/wide" --connections "$C" --duration "$D" --token "$TOKEN"
    run "https-on-r$r" --target "https://localhost:$HTTP_tls/v1/ids/wide" --ca "$OUT/cert.pem" --connections "$C" --duration "$D" --token "$TOKEN"
    run "grpc-off-r$r" --target "http://127.0.0.1:$HTTP_off" --grpc wide --connections 2 --duration "$D"
    run "grpc-on-r$r" --target "http://127.0.0.1:$HTTP_on" --grpc wide --connections 2 --duration "$D" --token "$TOKEN"
done
log "done; raw output in $OUT/raw"
