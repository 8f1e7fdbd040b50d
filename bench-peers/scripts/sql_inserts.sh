#!/usr/bin/env bash
# IDs made inside the database (BENCHMARKS.md, "IDs made inside the database"): inserts per
# second into a table whose primary key is filled by `snowdrift_id('bench')` beside the
# database's own keys, all in one run, the cases of a round in a rotated order, ROUNDS
# rounds; each case's median, range, and ratio to the database's own counter.
#
#   PostgreSQL (pgbench, a custom script file, -T DUR):
#     snowdrift  id bigint PRIMARY KEY DEFAULT snowdrift_id('bench')
#     bigserial  id bigserial PRIMARY KEY                      (nextval)
#     uuid       id uuid PRIMARY KEY DEFAULT gen_random_uuid()  (PostgreSQL 15 has no uuidv7())
#     single-row autocommit INSERTs at 1 and 16 sessions; `SELECT snowdrift_id(...)` and
#     `SELECT nextval(...)` alone (the call's own cost); INSERT ... SELECT FROM
#     generate_series(1, BULK) and psql's \copy of BULK rows, one session.
#   MariaDB (mysqlslap, --number-of-queries=MY_QUERIES; rows counted after each run):
#     snowdrift  id BIGINT PRIMARY KEY, a BEFORE INSERT trigger calling snowdrift_id('bench')
#     auto       id BIGINT AUTO_INCREMENT PRIMARY KEY
#     uuid       id UUID PRIMARY KEY DEFAULT UUID()             (MariaDB's UUID() is version 1)
#     the same single-row inserts, the call alone, and INSERT ... SELECT FROM seq_1_to_BULK.
#
#   bench-peers/scripts/sql_inserts.sh
#   ROUNDS=3 DUR=5 BULK=200000 ONLY=postgres bench-peers/scripts/sql_inserts.sh
#
# Needs psql, pgbench, mysql, mysqlslap and python3; a snowdrift binary (SNOWDRIFT, default
# target/release/snowdrift, else target/debug/snowdrift: only its `sql install` runs). Each
# database gets a database of its own (sdbench_PID), dropped at the end. PG is a URL of a
# PostgreSQL 15+ whose user may create databases; MYSQL_ARGS are the mysql client's
# connection options for a MariaDB 10.6+. Raw lines go to OUT (default
# target/sql-inserts/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z "${SNOWDRIFT:-}" ]]; then
  SNOWDRIFT=$ROOT/target/release/snowdrift
  [[ -x $SNOWDRIFT ]] || SNOWDRIFT=$ROOT/target/debug/snowdrift
fi
export SNOWDRIFT
export PG=${PG:-postgres://root:root@127.0.0.1:5432/test}
export MYSQL_ARGS=${MYSQL_ARGS:-"-uroot -h127.0.0.1 -P3306"}
export MYSQL_URL=${MYSQL_URL:-mysql://root@127.0.0.1:3306}
export ROUNDS=${ROUNDS:-5}
export BULK_ROUNDS=${BULK_ROUNDS:-3}
export DUR=${DUR:-8}
export BULK=${BULK:-1000000}
export MY_QUERIES=${MY_QUERIES:-3000}
export ONLY=${ONLY:-"postgres mariadb"}
export OUT=${OUT:-$ROOT/target/sql-inserts/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
{
  echo "date: $(date -u +%FT%TZ); load: $(uptime | sed 's/.*load average: //'); $(nproc) vCPU; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "snowdrift: $SNOWDRIFT ($(git -C "$ROOT" rev-parse --short HEAD))"
  echo "rounds $ROUNDS (bulk $BULK_ROUNDS), pgbench -T $DUR, mysqlslap $MY_QUERIES queries, bulk $BULK rows"
} | tee "$OUT/run.log"

python3 - <<'PY' | tee -a "$OUT/run.log"
import os, re, shlex, statistics, subprocess, sys, time

env = os.environ
out, rounds, bulk_rounds = env["OUT"], int(env["ROUNDS"]), int(env["BULK_ROUNDS"])
dur, bulk, my_queries = int(env["DUR"]), int(env["BULK"]), int(env["MY_QUERIES"])
name = f"sdbench_{os.getpid()}"
raw = open(os.path.join(out, "raw.txt"), "w")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"{cmd}: {p.stderr.strip()}")
    return p.stdout


def rotate(cases, r):
    k = r % len(cases)
    return cases[k:] + cases[:k]


def summary(title, unit, results, base, higher_is_better=True):
    """One table: each case's median, range and ratio of medians to `base`."""
    print(f"\n### {title}\n")
    print(f"| case | median {unit} | range | vs {base} |")
    print("|---|---:|---:|---:|")
    bm = statistics.median(results[base])
    for case, vals in results.items():
        m = statistics.median(vals)
        ratio = (bm / m) if higher_is_better else (m / bm)
        print(f"| {case} | {m:,.0f} | {min(vals):,.0f}-{max(vals):,.0f} | "
              f"{'1' if case == base else f'{ratio:.2f}x slower' if ratio >= 1 else f'{1/ratio:.2f}x faster'} |")
    sys.stdout.flush()


def record(case, value, line):
    raw.write(f"{case}\t{value}\t{line}\n")
    raw.flush()


# ---------------------------------------------------------------- PostgreSQL
def postgres():
    server, _ = env["PG"].rsplit("/", 1)
    url = f"{server}/{name}"

    def sql(q, db=url):
        return run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", db, "-c", q])

    sql(f"CREATE DATABASE {name}", env["PG"])
    try:
        run([env["SNOWDRIFT"], "sql", "install", "--store", url, "--generator", "bench",
             "--layout", "twitter", "--workers", "32"])
        sql("CREATE TABLE t_snowdrift (id bigint PRIMARY KEY DEFAULT snowdrift_id('bench'), v int NOT NULL);"
            "CREATE TABLE t_bigserial (id bigserial PRIMARY KEY, v int NOT NULL);"
            "CREATE TABLE t_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), v int NOT NULL);"
            "CREATE SEQUENCE s_alone")
        print(f"\nPostgreSQL: {sql('SELECT version()').strip()}; synchronous_commit "
              f"{sql('SHOW synchronous_commit').strip()}, fsync {sql('SHOW fsync').strip()}")
        tables = {"snowdrift": "t_snowdrift", "bigserial": "t_bigserial", "uuid": "t_uuid"}
        scripts = {}
        for case, t in tables.items():
            scripts[case] = os.path.join(out, f"pg_insert_{case}.sql")
            open(scripts[case], "w").write(f"INSERT INTO {t} (v) VALUES (1);\n")
        alone = {"snowdrift": "SELECT snowdrift_id('bench');", "bigserial": "SELECT nextval('s_alone');"}
        for case, q in alone.items():
            scripts["call " + case] = os.path.join(out, f"pg_call_{case}.sql")
            open(scripts["call " + case], "w").write(q + "\n")

        def tps_line(o):
            return re.search(r"tps = ([\d.]+) \(without initial connection time\)", o).group(1)

        def pgbench(script, clients):
            o = run(["pgbench", "-n", "-c", str(clients), "-j", str(min(clients, 2)),
                     "-T", str(dur), "-f", script, url])
            m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", o)
            return float(m.group(1))

        single = {c: {k: [] for k in tables} for c in (1, 16)}
        calls = {c: {k: [] for k in alone} for c in (1, 16)}
        for r in range(rounds):
            for clients in (1, 16):
                for case in rotate(list(tables), r):
                    sql(f"TRUNCATE {tables[case]}")
                    tps = pgbench(scripts[case], clients)
                    single[clients][case].append(tps)
                    record(f"pg insert {case} c{clients} r{r}", tps, "")
                for case in rotate(list(alone), r):
                    tps = pgbench(scripts["call " + case], clients)
                    calls[clients][case].append(tps)
                    record(f"pg call {case} c{clients} r{r}", tps, "")
            print(f"PostgreSQL round {r + 1}/{rounds} done, load {os.getloadavg()[0]:.1f}")
            sys.stdout.flush()

        # Where the time goes in the insert: the function's own time, as PostgreSQL counts it.
        sql("SELECT pg_stat_reset()")
        sql(f"TRUNCATE t_snowdrift")
        tps = run(["pgbench", "-n", "-c", "16", "-j", "2", "-T", str(dur), "-f", scripts["snowdrift"], url],
                  env={**env, "PGOPTIONS": "-c track_functions=pl"})
        time.sleep(1.5)
        fns = sql("SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions "
                  "WHERE funcname LIKE 'snowdrift%' ORDER BY calls DESC").strip().splitlines()

        # The WAL each way writes: setval() logs a record whenever a call starts a new tick
        # (nextval() logs one every 32 values), and makes the transaction write a commit.
        wal = {}
        for case in ("snowdrift", "bigserial"):
            t = tables[case]
            sql(f"TRUNCATE {t}; CHECKPOINT")
            plan = sql(f"EXPLAIN (ANALYZE, WAL, COSTS OFF) INSERT INTO {t} (v) SELECT 1 FROM generate_series(1, 100000)")
            wal[case] = re.search(r"WAL: (.*)", plan).group(1).strip()
            sql(f"TRUNCATE {t}")
            started = time.monotonic()
            for _ in range(20):
                sql(f"INSERT INTO {t} (v) VALUES (1)")
            plan = sql(f"EXPLAIN (ANALYZE, WAL, COSTS OFF) INSERT INTO {t} (v) VALUES (1)")
            m = re.search(r"WAL: (.*)", plan)
            wal[case + " one row"] = m.group(1).strip() if m else "none"

        bulk_cases = {}
        for case, t in tables.items():
            bulk_cases[f"{case} INSERT ... SELECT"] = (t, f"INSERT INTO {t} (v) SELECT 1 FROM generate_series(1, {bulk})")
        rows_file = os.path.join(out, "rows.txt")
        with open(rows_file, "w") as f:
            f.write("1\n" * bulk)
        for case, t in tables.items():
            bulk_cases[f"{case} COPY"] = (t, f"\\copy {t} (v) FROM '{rows_file}'")
        # The calls alone, in one statement: their cost without a row or a commit.
        bulk_cases["snowdrift_id() alone, SELECT count(...)"] = (None, f"SELECT count(snowdrift_id('bench')) FROM generate_series(1, {bulk})")
        bulk_cases["nextval() alone, SELECT count(...)"] = (None, f"SELECT count(nextval('s_alone')) FROM generate_series(1, {bulk})")
        bulk_res = {k: [] for k in bulk_cases}
        for r in range(bulk_rounds):
            for case in rotate(list(bulk_cases), r):
                t, q = bulk_cases[case]
                sql(f"TRUNCATE {t}; CHECKPOINT" if t else "CHECKPOINT")
                started = time.monotonic()
                sql(q)
                secs = time.monotonic() - started
                bulk_res[case].append(bulk / secs)
                record(f"pg bulk {case} r{r}", bulk / secs, f"{secs:.2f}s")
            print(f"PostgreSQL bulk round {r + 1}/{bulk_rounds} done, load {os.getloadavg()[0]:.1f}")
            sys.stdout.flush()

        for clients in (1, 16):
            summary(f"PostgreSQL: single-row INSERTs, {clients} session(s) (pgbench -c {clients} -T {dur})",
                    "inserts/s", single[clients], "bigserial")
        for clients in (1, 16):
            summary(f"PostgreSQL: the call alone, {clients} session(s) (SELECT ...; pgbench -c {clients})",
                    "calls/s", calls[clients], "bigserial")
        ordered = {k: bulk_res[k] for k in sorted(bulk_res, key=lambda k: ("alone" in k, "COPY" in k, k))}
        summary(f"PostgreSQL: {bulk:,} rows in one statement, one session", "rows/s", ordered,
                "bigserial INSERT ... SELECT")
        print(f"\nPostgreSQL, single-row INSERTs at 16 sessions with track_functions = pl, "
              f"{float(tps_line(tps)):,.0f} inserts/s:")
        for line in fns:
            f, calls_n, total_ms, self_ms = line.split("|")
            calls_n, total_ms, self_ms = int(calls_n), float(total_ms), float(self_ms)
            print(f"  {f}: {calls_n:,} calls, {1000 * total_ms / calls_n:.1f} µs a call "
                  f"(self {1000 * self_ms / calls_n:.1f} µs)")
        print("\nPostgreSQL, WAL written (EXPLAIN (ANALYZE, WAL)):")
        for case, w in wal.items():
            print(f"  {case if 'one row' in case else case + ', 100,000 rows in one INSERT'}: {w}")
    finally:
        sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", env["PG"])


# ---------------------------------------------------------------- MariaDB
def mariadb():
    my = shlex.split(env["MYSQL_ARGS"])
    url = f"{env['MYSQL_URL']}/{name}"

    def sql(q, db=name):
        return run(["mysql", *my, "-N", "-B", *([db] if db else []), "-e", q])

    sql(f"CREATE DATABASE {name}", None)
    try:
        run([env["SNOWDRIFT"], "sql", "install", "--store", url, "--generator", "bench",
             "--layout", "twitter", "--workers", "32"])
        sql("CREATE TABLE t_snowdrift (id BIGINT NOT NULL DEFAULT 0 PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB;"
            "CREATE TRIGGER t_snowdrift_id BEFORE INSERT ON t_snowdrift FOR EACH ROW "
            "SET NEW.id = IF(NEW.id = 0, snowdrift_id('bench'), NEW.id);"
            "CREATE TABLE t_auto (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB;"
            "CREATE TABLE t_uuid (id UUID NOT NULL DEFAULT UUID() PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB")
        print(f"\nMariaDB: {sql('SELECT VERSION()').strip()}; innodb_flush_log_at_trx_commit "
              f"{sql('SELECT @@innodb_flush_log_at_trx_commit').strip()}, log_bin {sql('SELECT @@log_bin').strip()}")
        tables = {"snowdrift": "t_snowdrift", "auto": "t_auto", "uuid": "t_uuid"}
        alone = {"snowdrift": "SELECT snowdrift_id('bench')", "uuid": "SELECT UUID()"}

        def slap(query, clients, count_table=None):
            o = run(["mysqlslap", *my, f"--create-schema={name}", f"--concurrency={clients}",
                     "--iterations=1", f"--number-of-queries={my_queries}", f"--query={query}"])
            secs = float(re.search(r"Average number of seconds to run all queries: ([\d.]+)", o).group(1))
            n = int(sql(f"SELECT COUNT(*) FROM {count_table}").strip()) if count_table else my_queries
            return n / secs

        single = {c: {k: [] for k in tables} for c in (1, 16)}
        calls = {c: {k: [] for k in alone} for c in (1, 16)}
        for r in range(rounds):
            for clients in (1, 16):
                for case in rotate(list(tables), r):
                    t = tables[case]
                    sql(f"TRUNCATE {t}")
                    v = slap(f"INSERT INTO {t} (v) VALUES (1)", clients, t)
                    single[clients][case].append(v)
                    record(f"my insert {case} c{clients} r{r}", v, "")
                for case in rotate(list(alone), r):
                    v = slap(alone[case], clients)
                    calls[clients][case].append(v)
                    record(f"my call {case} c{clients} r{r}", v, "")
            print(f"MariaDB round {r + 1}/{rounds} done, load {os.getloadavg()[0]:.1f}")
            sys.stdout.flush()

        # Whether the lease table's lock covers an autocommit insert's commit: the same
        # 16-session inserts with the commit as a statement of its own (--commit=1).
        commit_apart = {}
        for case in ("snowdrift", "auto"):
            for mode in ([], ["--commit=1"]):
                t = tables[case]
                sql(f"TRUNCATE {t}")
                o = run(["mysqlslap", *my, f"--create-schema={name}", "--concurrency=16",
                         "--iterations=1", f"--number-of-queries={my_queries}", *mode,
                         f"--query=INSERT INTO {t} (v) VALUES (1)"])
                secs = float(re.search(r"all queries: ([\d.]+)", o).group(1))
                n = int(sql(f"SELECT COUNT(*) FROM {t}").strip())
                commit_apart[f"{case} {'--commit=1' if mode else 'autocommit'}"] = n / secs

        bulk_cases = {f"{c} INSERT ... SELECT": t for c, t in tables.items()}
        bulk_res = {k: [] for k in bulk_cases}
        for r in range(bulk_rounds):
            for case in rotate(list(bulk_cases), r):
                t = bulk_cases[case]
                sql(f"TRUNCATE {t}")
                started = time.monotonic()
                sql(f"INSERT INTO {t} (v) SELECT 1 FROM seq_1_to_{bulk}")
                secs = time.monotonic() - started
                bulk_res[case].append(bulk / secs)
                record(f"my bulk {case} r{r}", bulk / secs, f"{secs:.2f}s")
            print(f"MariaDB bulk round {r + 1}/{bulk_rounds} done, load {os.getloadavg()[0]:.1f}")
            sys.stdout.flush()

        for clients in (1, 16):
            summary(f"MariaDB: single-row INSERTs, {clients} session(s) (mysqlslap --concurrency={clients})",
                    "inserts/s", single[clients], "auto")
        for clients in (1, 16):
            summary(f"MariaDB: the call alone, {clients} session(s) (mysqlslap --concurrency={clients})",
                    "calls/s", calls[clients], "uuid")
        summary(f"MariaDB: {bulk:,} rows in one statement, one session", "rows/s", bulk_res,
                "auto INSERT ... SELECT")
        print("\nMariaDB, single-row INSERTs at 16 sessions, autocommit or with the commit apart (one run each):")
        for case, v in commit_apart.items():
            print(f"  {case}: {v:,.0f}/s")
    finally:
        sql(f"DROP DATABASE IF EXISTS {name}", None)


for db in env["ONLY"].split():
    {"postgres": postgres, "mariadb": mariadb}[db]()
print(f"\nload at the end: {os.getloadavg()}")
PY
