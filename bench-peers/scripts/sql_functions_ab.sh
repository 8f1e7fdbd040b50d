#!/usr/bin/env bash
# Two builds' PostgreSQL functions side by side (BENCHMARKS.md, "IDs made inside the
# database"): OLD's and NEW's `snowdrift sql install` each into a database of its own,
# then, in alternating rounds (the order rotated each round), single-row autocommit
# INSERTs through `DEFAULT snowdrift_id('bench')` at 1 and 16 sessions (pgbench -T DUR),
# with a bigserial table beside them, and the call alone in one statement
# (SELECT count(snowdrift_id('bench')) FROM generate_series(1, CALLS)). Prints each case's
# median and range, and NEW's ratio to OLD per round.
#
#   OLD=/path/to/old/snowdrift NEW=target/debug/snowdrift bench-peers/scripts/sql_functions_ab.sh
#
# Needs psql and pgbench; PG is a URL of a PostgreSQL 15+ whose user may create databases.
set -euo pipefail
: "${OLD:?the older snowdrift binary}" "${NEW:?the newer snowdrift binary}"
PG=${PG:-postgres://root:root@127.0.0.1:5432/test}
ROUNDS=${ROUNDS:-5} DUR=${DUR:-8} CALLS=${CALLS:-200000}
server=${PG%/*}
out=$(mktemp -d)
trap 'for v in old new; do psql -X -q "$PG" -c "DROP DATABASE IF EXISTS sdab_${v}_$$ WITH (FORCE)" >/dev/null; done; rm -rf "$out"' EXIT
for v in old new; do
  db=sdab_${v}_$$
  psql -X -q -v ON_ERROR_STOP=1 "$PG" -c "CREATE DATABASE $db" >/dev/null
  bin=OLD; [[ $v == new ]] && bin=NEW
  "${!bin}" sql install --store "$server/$db" --generator bench --layout twitter --workers 32 >/dev/null
  psql -X -q -v ON_ERROR_STOP=1 "$server/$db" -c \
    "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowdrift_id('bench'), v int NOT NULL);
     CREATE TABLE b (id bigserial PRIMARY KEY, v int NOT NULL)" >/dev/null
done
echo "INSERT INTO t (v) VALUES (1);" >"$out/t.sql"
echo "INSERT INTO b (v) VALUES (1);" >"$out/b.sql"
echo "date: $(date -u +%FT%TZ); load: $(uptime | sed 's/.*load average: //'); $(nproc) vCPU"
echo "old: $OLD; new: $NEW; rounds $ROUNDS, pgbench -T $DUR, $CALLS calls"
cases=(old new bigserial)
for ((r = 0; r < ROUNDS; r++)); do
  k=$((r % 3)); order=("${cases[@]:k}" "${cases[@]:0:k}")
  for c in 1 16; do
    for case in "${order[@]}"; do
      db=sdab_${case}_$$ script=t.sql
      [[ $case == bigserial ]] && db=sdab_old_$$ script=b.sql
      tps=$(pgbench -n -c "$c" -j "$((c < 2 ? c : 2))" -T "$DUR" -f "$out/$script" "$server/$db" |
        sed -n 's/.*tps = \([0-9.]*\) (without initial connection time).*/\1/p')
      echo "insert c$c $case $tps" >>"$out/raw"
    done
  done
  for case in old new; do
    db=sdab_${case}_$$
    s=$(date +%s%N)
    psql -X -q -At "$server/$db" -c "SELECT count(snowdrift_id('bench')) FROM generate_series(1, $CALLS)" >/dev/null
    e=$(date +%s%N)
    echo "call c1 $case $(( (e - s) / CALLS ))" >>"$out/raw"
  done
  echo "round $((r + 1))/$ROUNDS done, load $(cut -d' ' -f1 /proc/loadavg)"
done
python3 - "$out/raw" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    what, c, case, v = line.split()
    rows[(what, c, case)].append(float(v))
for what, unit in (("insert", "inserts/s"), ("call", "ns a call")):
    for c in ("c1", "c16"):
        cases = [k for k in rows if k[0] == what and k[1] == c]
        if not cases:
            continue
        print(f"\n{what}, {c[1:]} session(s), {unit}:")
        for k in sorted(cases, key=lambda k: k[2]):
            v = rows[k]
            print(f"  {k[2]:<10} median {statistics.median(v):>10,.0f}  range {min(v):,.0f}-{max(v):,.0f}")
        old, new = rows[(what, c, "old")], rows[(what, c, "new")]
        ratios = [n / o for o, n in zip(old, new)]
        word = "new/old (above 1: new faster)" if what == "insert" else "new/old (below 1: new faster)"
        print(f"  {word}: median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")
        if what == "insert":
            b = rows[(what, c, "bigserial")]
            for case in ("old", "new"):
                rs = [bb / x for bb, x in zip(b, rows[(what, c, case)])]
                print(f"  bigserial/{case} per round (time per insert vs bigserial): median {statistics.median(rs):.2f}x, range {min(rs):.2f}-{max(rs):.2f}")
PY
