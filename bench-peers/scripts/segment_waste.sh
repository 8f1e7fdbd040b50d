#!/usr/bin/env bash
# IDs a segment tag loses to kill -9 restarts of a busy server, by [store] max_step and
# prefetch_at (BENCHMARKS.md, "Segment waste per crash"). A crash loses what the server had
# claimed and not yet issued: the rest of the current segment and the segments claimed
# ahead, whose size the dynamic step grows under load (doubling each segment used in under
# 15 minutes, up to max_step).
#
# For each setting, its own server on its own SQLite store with a tag `w` (step 1,000); then
# ROUNDS rounds, each setting in turn: LOAD of `snowdrift bench` (20 connections asking for
# 100 IDs a request), one more ID (the last issued), kill -9, a restart, one ID (the first
# after): the restart skipped first - last - 1 IDs. Prints per setting the IDs/s under load,
# the skip per restart (median and max) and the share of all IDs handed out that were skipped.
#
#   bench-peers/scripts/segment_waste.sh            # build, then run
#   SKIP_BUILD=1 ROUNDS=10 LOAD=5s bench-peers/scripts/segment_waste.sh
#
# Needs python3, curl. Writes raw output to OUT (default target/segment-waste/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=serve.sh
source "$ROOT/bench-peers/scripts/serve.sh"
release_run segment-waste
ROUNDS=${ROUNDS:-10}
LOAD=${LOAD:-5s}

SETTINGS=("default" "max_step=10000" "max_step=10000,prefetch_at=0.8")
declare -A PID PORT
cleanup() {
    for s in "${SETTINGS[@]}"; do
        [[ -n ${PID[$s]:-} ]] && kill -9 "${PID[$s]}" 2>/dev/null || true
    done
}
trap cleanup EXIT

dir_of() { echo "$OUT/$(echo "$1" | tr ',=' '__')"; }
start() { # SETTING
    local dir; dir=$(dir_of "$1")
    mkdir -p "$dir"
    if [[ ! -f $dir/server.toml ]]; then
        PORT[$1]=$(free_port)
        {
            printf '[server]\nlisten = "127.0.0.1:%s"\n\n[store]\nurl = "sqlite://%s/ids.db"\n' "${PORT[$1]}" "$dir"
            if [[ $1 != default ]]; then
                echo "$1" | tr ',' '\n'
            fi
            printf '\n[worker]\npath = "%s/workers"\n' "$dir"
        } >"$dir/server.toml"
    fi
    "$SD" serve --config "$dir/server.toml" >>"$dir/server.log" 2>&1 &
    PID[$1]=$!
    wait_http "http://127.0.0.1:${PORT[$1]}/healthz"
}
one_id() { # SETTING
    curl -sf "http://127.0.0.1:${PORT[$1]}/v1/ids/w" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"][0])'
}

for s in "${SETTINGS[@]}"; do
    start "$s"
    "$SD" tags --server "http://127.0.0.1:${PORT[$s]}" create w --step 1000 >/dev/null
    echo "$(one_id "$s")" >"$(dir_of "$s")/first"
done

for round in $(seq "$ROUNDS"); do
    for s in "${SETTINGS[@]}"; do
        dir=$(dir_of "$s")
        "$SD" bench --target "http://127.0.0.1:${PORT[$s]}/v1/ids/w?count=100" \
            --connections 20 --duration "$LOAD" >"$dir/bench-$round.txt" 2>&1
        last=$(one_id "$s")
        kill -9 "${PID[$s]}"; wait "${PID[$s]}" 2>/dev/null || true
        start "$s"
        first=$(one_id "$s")
        echo "$last $first" >>"$dir/restarts"
        log "round $round, $s: last $last, next after restart $first, skipped $((first - last - 1))"
    done
done

log "results ($ROUNDS restarts each, load $LOAD of 20 connections x 100 IDs per request)"
for s in "${SETTINGS[@]}"; do
    dir=$(dir_of "$s")
    python3 - "$s" "$dir" <<'PY' | tee -a "$OUT/run.log"
import pathlib, re, statistics, sys
name, d = sys.argv[1], pathlib.Path(sys.argv[2])
pairs = [tuple(map(int, l.split())) for l in (d / "restarts").read_text().split("\n") if l]
skips = [b - a - 1 for a, b in pairs]
first = int((d / "first").read_text())
span = pairs[-1][1] - first + 1
rates = []
for f in sorted(d.glob("bench-*.txt")):
    m = re.search(r"([\d,.]+) IDs/s", f.read_text())
    if m:
        rates.append(float(m.group(1).replace(",", "")))
print(f"{name:32} IDs/s under load median {statistics.median(rates):,.0f} "
      f"(min {min(rates):,.0f}, max {max(rates):,.0f}); skipped per restart median "
      f"{statistics.median(skips):,.0f}, max {max(skips):,}; skipped in all "
      f"{sum(skips):,} of {span:,} ({100 * sum(skips) / span:.1f}%)")
PY
done
