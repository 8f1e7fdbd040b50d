# Starting `snowdrift serve` for the load scripts: free ports, waiting for an answer, and the
# benchmark server's config; and the setup the newer scripts share (release_run). Sourced,
# not run; server_config reads $PG_URL.

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL: until it answers 200, at most 30 s (an https:// URL's certificate unchecked)
    for _ in $(seq 300); do
        curl -sfk -o /dev/null "$1" && return 0
        sleep 0.1
    done
    echo "no answer from $1" >&2
    return 1
}
wait_tcp() { # PORT
    for _ in $(seq 300); do
        (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    return 1
}

server_config() { # PORT TABLE WORKERS_DIR [RESP_PORT]: on PostgreSQL ($PG_URL), two snowflake generators
    cat <<CONFIG
[server]
listen = "127.0.0.1:$1"
${4:+resp_listen = \"127.0.0.1:$4\"}

[store]
url = "$PG_URL"
table = "$2"

[worker]
path = "$3"

# The sustained rate: Twitter's layout caps one worker at 4,096,000 IDs/s.
[[generator]]
name = "snowflake"
kind = "snowflake"
layout = "twitter"

# The hot path: 22 sequence bits (4,194,304 IDs per ms), so a request almost never waits
# for the clock; 40 time bits of 1 ms last 34 years from the epoch.
[[generator]]
name = "wide"
kind = "snowflake"
bits = "time:40,worker:1,seq:22"
unit = "1ms"
epoch = "2026-01-01"
CONFIG
}

release_run() { # NAME: OUT (default target/NAME/DATE) with bin/ and raw/, log(), the commit
                # and machine logged, the release binary built (unless SKIP_BUILD) and
                # copied to $SD, so a rebuild mid-run does not change what is measured
    OUT=${OUT:-$ROOT/target/$1/$(date -u +%Y%m%dT%H%M%SZ)}
    mkdir -p "$OUT/bin" "$OUT/raw"
    cd "$OUT"
    log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/run.log"; }
    log "commit $(git -C "$ROOT" rev-parse --short HEAD); uncommitted in crates/: $(git -C "$ROOT" status --short -- crates | wc -l) file(s)"
    log "machine: $(nproc) vCPU, $(lscpu | sed -n 's/^Model name: *//p'), $(uname -r)"
    if [[ -z ${SKIP_BUILD:-} ]]; then
        log "building (cargo build --release -p snowdrift)"
        (cd "$ROOT" && cargo build --release -j 2 -p snowdrift) >"$OUT/build.log" 2>&1
    fi
    cp "$ROOT/target/release/snowdrift" "$OUT/bin/"
    SD="$OUT/bin/snowdrift"
}
