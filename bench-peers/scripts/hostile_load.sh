#!/usr/bin/env bash
# Hostile clients against `snowdrift serve` with its default [limits] (BENCHMARKS.md, "Slow
# and hostile clients"), each beside a real client (`snowdrift bench`, 10 connections):
#
#   A. 1,500 connections that send half a request head and wait: how long until the server
#      has closed them all, and the real client's rate meanwhile against a calm run.
#   B. 3,000 unauthenticated connections each sending an unfinished 400 KB head: the
#      server's RSS before, at the peak, and after they leave.
#   C. The server started under a 1,024 open-file limit (as on many hosts), then 1,100 idle
#      connections: the real client's rate, new connections, and snowflake issuing. (The
#      attacker counts as "open" connections the kernel completed but the server has not
#      accepted yet, beyond the listen backlog; the server's descriptors say what it holds.)
#   D. 20,000 gRPC `Stream` calls (100 HTTP/2 connections of 200 streams, the most a connection
#      may have open), of uuid7 IDs and then of the real client's own snowflake generator, asking for 100
#      million IDs each, from a client that never reads a byte of the answers: the server's
#      RSS before, at the peak and after, and the real client's rate meanwhile.
#
#   bench-peers/scripts/hostile_load.sh            # build, then run
#   SKIP_BUILD=1 bench-peers/scripts/hostile_load.sh
#   SCENARIOS=D bench-peers/scripts/hostile_load.sh   # only some of A-D
#
# Needs python3, curl. Writes raw output to OUT (default target/hostile-load/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run hostile-load
ulimit -n "$(ulimit -Hn)"

SERVER_PID=""
cleanup() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

start_server() { # NOFILE: the server under that open-file limit (hard and soft)
    PORT=$(free_port)
    cat >"$OUT/server.toml" <<CONFIG
[server]
listen = "127.0.0.1:$PORT"

[store]
url = "sqlite://$OUT/ids.db"

[worker]
path = "$OUT/workers"
CONFIG
    (ulimit -n "$1"; exec "$SD" serve --config "$OUT/server.toml") >>"$OUT/raw/server.log" 2>&1 &
    SERVER_PID=$!
    wait_http "http://127.0.0.1:$PORT/readyz"
}
stop_server() {
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}
rss_mb() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status"; }
peak_rss_while() { # PID STEPS: the server's largest RSS (MB) in PEAK, read every 0.5 s
                   # while PID runs, at most STEPS times
    PEAK=0
    for _ in $(seq "$2"); do
        PEAK=$(python3 -c "print(max($PEAK, $(rss_mb)))")
        kill -0 "$1" 2>/dev/null || break
        sleep 0.5
    done
}
real_client() { # NAME SECONDS
    "$SD" bench --target "http://127.0.0.1:$PORT/v1/ids/snowflake" --connections 10 --duration "$2s" \
        >"$OUT/raw/$1.txt" 2>&1 || true
    grep -E '^requests' "$OUT/raw/$1.txt" | tr -s ' '
}

# The attackers: python, one process, asyncio.
attack() { # MODE COUNT HOLD_SECONDS
    python3 - "$PORT" "$@" <<'PY'
import asyncio, sys, time
port, mode, count, hold = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
closed_at = []
async def one(i, start):
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        closed_at.append(0.0)
        return "refused"
    try:
        if mode == "half":
            w.write(b"GET /v1/ids/snowflake HTTP/1.1\r\nhost: x\r\n")
        elif mode == "big":
            w.write(b"GET /v1/ids/snowflake HTTP/1.1\r\nhost: x\r\n")
            line = b"x-filler: " + b"a" * 1000 + b"\r\n"
            for _ in range(400):
                w.write(line)
                await asyncio.wait_for(w.drain(), 5)
        await w.drain()
        data = await asyncio.wait_for(r.read(65536), hold)
        while data:
            data = await asyncio.wait_for(r.read(65536), hold)
        closed_at.append(time.monotonic() - start)
        return "closed"
    except (asyncio.TimeoutError, OSError, ConnectionError):
        if time.monotonic() - start < hold:
            closed_at.append(time.monotonic() - start)
            return "closed"
        return "open"
    finally:
        w.close()
async def main():
    start = time.monotonic()
    results = await asyncio.gather(*(one(i, start) for i in range(count)))
    done = sorted(closed_at)
    last = done[-1] if done else None
    print(f"{mode}: {count} connections: {results.count('closed')} closed by the server, "
          f"{results.count('refused')} refused at connect, {results.count('open')} still open "
          f"after {hold:.0f} s; last closed at {last:.1f} s" if last is not None else
          f"{mode}: {count}: {results}")
asyncio.run(main())
PY
}

SCENARIOS=${SCENARIOS:-ABCD}
if [[ $SCENARIOS == *A* || $SCENARIOS == *B* ]]; then
log "A. 1,500 half-sent heads (header_timeout 10 s)"
start_server "$(ulimit -Hn)"
log "calm: $(real_client calm 12)"
attack half 1500 30 >"$OUT/raw/half.txt" &
ATTACK=$!
sleep 1
log "under attack: $(real_client attacked 12)"
wait "$ATTACK"
log "$(cat "$OUT/raw/half.txt")"

log "B. 3,000 unfinished 400 KB heads"
log "RSS before: $(rss_mb) MB"
attack big 3000 30 >"$OUT/raw/big.txt" &
ATTACK=$!
peak_rss_while "$ATTACK" 40
wait "$ATTACK" || true
log "$(cat "$OUT/raw/big.txt")"
sleep 12
log "RSS peak during: $PEAK MB; 12 s after they left: $(rss_mb) MB"
stop_server

fi

if [[ $SCENARIOS == *C* ]]; then
log "C. open-file limit 1,024, then 1,100 idle connections"
start_server 1024
grep "max_connections" "$OUT/raw/server.log" | tail -1 | sed 's/^/    /' | tee -a "$OUT/run.log" || true
# The real client connects first (it keeps its 10 connections), then the flood comes.
real_client flooded 15 >"$OUT/raw/flooded.line" &
REAL=$!
sleep 1
attack idle 1100 20 >"$OUT/raw/idle.txt" &
ATTACK=$!
sleep 3
log "server's open descriptors during the flood: $(ls "/proc/$SERVER_PID/fd" | wc -l)"
log "a new connection during the flood: $(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/ids/snowflake" || echo refused)"
wait "$REAL" || true
log "real client, connected before the flood: $(cat "$OUT/raw/flooded.line")"
wait "$ATTACK" || true
log "$(cat "$OUT/raw/idle.txt")"
log "after: $(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^snowdrift_connections_(max|refused_total) ' | paste -sd' ')"
stop_server
fi

if [[ $SCENARIOS == *D* ]]; then
grpc_attack() { # GENERATOR: what the 20,000 streams ask for
log "D. 20,000 gRPC streams that never read, asking for $1"
start_server "$(ulimit -Hn)"
log "calm: $(real_client "grpc-calm-$1" 10)"
log "RSS before: $(rss_mb) MB"
python3 - "$PORT" 100 200 25 "$1" >"$OUT/raw/grpc-$1.txt" <<'PY' &
# Raw HTTP/2 frames, so nothing on the client side reads or acknowledges data: each
# connection sends its preface and settings, then its gRPC Stream calls, and stops reading.
import asyncio, struct, sys
port, conns, streams, hold = (int(a) for a in sys.argv[1:5])
name = sys.argv[5].encode()
def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
def literal(index, value):  # literal header field without indexing, indexed name
    v = value.encode()
    return (bytes([index]) if index < 15 else bytes([15, index - 15])) + bytes([len(v)]) + v
headers = (bytes([0x83, 0x86])  # :method POST, :scheme http
           + literal(4, "/snowdrift.v1.IdService/Stream") + literal(1, "x")
           + literal(31, "application/grpc") + b"\x00\x02te\x08trailers")
message = b"\x0a" + bytes([len(name)]) + name + b"\x10\x80\xc2\xd7\x2f"  # count 100,000,000
body = b"\x00" + struct.pack(">I", len(message)) + message
async def one():
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
    for k in range(streams):
        sid = 2 * k + 1
        w.write(frame(1, 4, sid, headers) + frame(0, 1, sid, body))
        if k % 100 == 99:
            await w.drain()
    await w.drain()
    await asyncio.sleep(hold)  # never reads: the server's answers pile up on its side
    w.close()
async def main():
    await asyncio.gather(*(one() for _ in range(conns)))
    print(f"{conns} connections x {streams} streams held {hold} s without reading")
asyncio.run(main())
PY
ATTACK=$!
sleep 2
real_client "grpc-attacked-$1" 10 >"$OUT/raw/grpc-attacked-$1.line" &
REAL=$!
peak_rss_while "$ATTACK" 50
wait "$REAL" || true
wait "$ATTACK" || true
log "$(cat "$OUT/raw/grpc-$1.txt")"
log "real client (snowflake IDs over HTTP) meanwhile: $(cat "$OUT/raw/grpc-attacked-$1.line")"
log "Stream calls ended, by status: $(curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^snowdrift_request_duration_seconds_count\{.*Stream' | sed 's/.*status="\([^"]*\)".*} /\1 /' | paste -sd' ')"
sleep 12
log "RSS peak during: $PEAK MB; 12 s after they left: $(rss_mb) MB"
stop_server
}
grpc_attack uuid7
grpc_attack snowflake
fi

log "done; raw output in $OUT/raw"
