# Parsers shared by the load scripts: each turns a client's output into lines
# "ROUND<TAB>ROW<TAB>METRIC<TAB>VALUE" of $RESULTS. Sourced, not run.

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RESULTS"; }
# A Rust Duration's Debug text (812.5µs, 1.43ms, 2.1s, 900ns) in microseconds.
to_us() {
    awk -v d="$1" 'BEGIN {
        if (d ~ /µs$/) { sub(/µs$/, "", d); print d + 0 }
        else if (d ~ /ms$/) { sub(/ms$/, "", d); print d * 1000 }
        else if (d ~ /ns$/) { sub(/ns$/, "", d); print d / 1000 }
        else if (d ~ /s$/) { sub(/s$/, "", d); print d * 1000000 }
        else print "nan" }'
}
per_s() { # FILE KEY UNIT: the "(N UNIT)" figure on the line starting with KEY
    grep "^$2 " "$1" | sed -E "s#.*\(([0-9,.]+) $3.*#\1#" | tr -d ,
}
sd_http() { # REP NAME FILE
    record "$1" "$2" req_per_s "$(per_s "$3" requests requests/s)"
    record "$1" "$2" ids_per_s "$(per_s "$3" ids IDs/s)"
    local lat
    lat=$(grep '^latency' "$3")
    record "$1" "$2" p50_us "$(to_us "$(awk '{print $3}' <<<"$lat")")"
    record "$1" "$2" p99_us "$(to_us "$(awk '{print $5}' <<<"$lat")")"
    record "$1" "$2" p999_us "$(to_us "$(awk '{print $7}' <<<"$lat")")"
    record "$1" "$2" errors "$(grep '^requests' "$3" | sed -E 's/.*, ([0-9]+) error.*/\1/')"
    # At a fixed rate: how often and how long the client's own thread was kept off its CPU.
    if grep -q '^client ' "$3"; then
        local stall
        stall=$(grep '^client ' "$3")
        record "$1" "$2" client_stalls "$(awk '{print $3}' <<<"$stall")"
        record "$1" "$2" client_stalled_us "$(to_us "$(sed -E 's/.*, ([^ ]+) in all.*/\1/' <<<"$stall")")"
    fi
}
sd_stream() { # REP NAME FILE (snowdrift bench --grpc and ferroid_grpc_load print alike)
    record "$1" "$2" ids_per_s "$(per_s "$3" ids IDs/s)"
    record "$1" "$2" streams_per_s "$(per_s "$3" streams streams/s)"
    local lat
    lat=$(grep '^stream ' "$3")
    record "$1" "$2" stream_p50_us "$(to_us "$(awk '{print $3}' <<<"$lat")")"
    record "$1" "$2" stream_p99_us "$(to_us "$(awk '{print $5}' <<<"$lat")")"
    record "$1" "$2" errors "$(grep '^streams' "$3" | sed -E 's/.*, ([0-9]+) error.*/\1/')"
}
wrk_http() { # REP NAME FILE
    record "$1" "$2" req_per_s "$(awk '/^Requests\/sec/ {print $2}' "$3")"
    record "$1" "$2" p50_us "$(to_us "$(awk '$1 == "50%" {print $2}' "$3" | sed 's/us$/µs/')")"
    record "$1" "$2" p99_us "$(to_us "$(awk '$1 == "99%" {print $2}' "$3" | sed 's/us$/µs/')")"
    record "$1" "$2" errors "$(awk '/Non-2xx|Socket errors/ {n++} END {print n + 0}' "$3")"
}
