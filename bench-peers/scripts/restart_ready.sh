#!/usr/bin/env bash
# Restart to ready (BENCHMARKS.md, "Restart without waiting for a mark"): a `snowdrift serve`
# that has run a few seconds is stopped (kill -9, or SIGTERM) and started again on the same
# config, with another free worker ID whose high-water mark has passed; measured is the time
# from spawning the new process to its first 200 on /readyz (polled every millisecond).
# BEFORE and AFTER are two binaries (main and the branch), each with its own server,
# namespace and port, restarted in alternating order, ROUNDS rounds per case:
#
#   file KILL  file registry, kill -9 (the lock is dropped at once; its mark is up to
#              worker.window ahead)
#   etcd KILL  etcd registry, kill -9 (the killed server's lease keeps its ID until the ttl
#              runs out: the restart takes another ID either way)
#   etcd TERM  etcd registry, SIGTERM (the ID is released at once with its mark ahead)
#
#   BEFORE=/path/main/snowdrift AFTER=target/release/snowdrift bench-peers/scripts/restart_ready.sh
#   ROUNDS=9 CASES="file:KILL" BEFORE=... AFTER=... bench-peers/scripts/restart_ready.sh
#
# A binary of main: git worktree add /tmp/sd-main main && (cd /tmp/sd-main && cargo build
# --release -p snowdrift). Needs python3, and etcd at ETCD (default 127.0.0.1:2379) for the
# etcd cases. Ports PORT_BASE.. (default 19400); raw lines go to OUT (default
# target/restart-ready/DATE).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
: "${BEFORE:?set BEFORE to the binary to compare against (main)}"
: "${AFTER:?set AFTER to the binary under test}"
export BEFORE AFTER
export ROUNDS=${ROUNDS:-7}
export CASES=${CASES:-"file:KILL etcd:KILL etcd:TERM"}
export ETCD=${ETCD:-127.0.0.1:2379}
export PORT_BASE=${PORT_BASE:-19400}
export HOLD=${HOLD:-3.5}
export OUT=${OUT:-$ROOT/target/restart-ready/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
echo "load: $(uptime | sed 's/.*load average: //'); $(nproc) vCPU; before $BEFORE; after $AFTER" | tee "$OUT/run.log"

python3 - <<'PY' | tee -a "$OUT/run.log"
import http.client, json, os, signal, statistics, subprocess, time

out, rounds, hold = os.environ["OUT"], int(os.environ["ROUNDS"]), float(os.environ["HOLD"])
bins = {"before": os.environ["BEFORE"], "after": os.environ["AFTER"]}
stamp = time.strftime("%H%M%S")

def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()

def config(case, which, port):
    registry, _ = case.split(":")
    d = f"{out}/{registry}-{which}"
    os.makedirs(d, exist_ok=True)
    ns = f"rr_{stamp}_{registry}_{which}"
    if registry == "file":
        worker = f'registry = "file"\npath = "{d}/workers"'
    else:
        worker = f'registry = "etcd"\nurl = "etcd://{os.environ["ETCD"]}"'
    path = f"{d}/snowdrift-{case.replace(':', '-')}.toml"
    with open(path, "w") as f:
        f.write(f'[server]\nlisten = "127.0.0.1:{port}"\n\n[store]\nurl = "sqlite://{d}/ids.db"\n\n'
                f'[worker]\n{worker}\nnamespace = "{ns}"\n\n'
                f'[[generator]]\nname = "sf"\nkind = "snowflake"\nlayout = "twitter"\n')
    return path

def start(which, cfg, port, log):
    """Spawns a server; returns (process, ms from spawn to the first 200 on /readyz)."""
    t0 = time.monotonic()
    p = subprocess.Popen([bins[which], "serve", "--config", cfg], stdout=log, stderr=log)
    while True:
        try:
            if get(port, "/readyz")[0] == 200:
                return p, (time.monotonic() - t0) * 1000
        except OSError:
            pass
        if p.poll() is not None:
            raise SystemExit(f"{which} exited: see {log.name}")
        if time.monotonic() - t0 > 60:
            raise SystemExit(f"{which} never ready: see {log.name}")
        time.sleep(0.001)

def worker_id(port):
    v = json.loads(get(port, "/v1/generators")[1])
    return next(g for g in v["generators"] if g["name"] == "sf")["worker"]["worker_id"]

def stop(p, sig):
    p.send_signal(sig)
    p.wait()

results = {}
for n, case in enumerate(os.environ["CASES"].split()):
    sig = signal.SIGKILL if case.endswith("KILL") else signal.SIGTERM
    servers, cfgs, ports, logs = {}, {}, {}, {}
    for i, which in enumerate(bins):
        ports[which] = int(os.environ["PORT_BASE"]) + 10 * n + i
        cfgs[which] = config(case, which, ports[which])
        logs[which] = open(f"{out}/{case.replace(':', '-')}-{which}.log", "ab")
        servers[which], _ = start(which, cfgs[which], ports[which], logs[which])
    for which in bins:
        # A second server (same registry, namespace and store, its own port) leaves ID 1
        # behind, stopped and released, so another free ID is there; the first keeps ID 0.
        cfg2 = cfgs[which].replace(".toml", "-second.toml")
        with open(cfgs[which]) as f, open(cfg2, "w") as g:
            g.write(f.read().replace(f"127.0.0.1:{ports[which]}", f"127.0.0.1:{ports[which] + 5}"))
        second, _ = start(which, cfg2, ports[which] + 5, logs[which])
        stop(second, signal.SIGTERM)
    time.sleep(hold)
    for r in range(rounds):
        order = list(bins) if r % 2 == 0 else list(reversed(bins))
        for which in order:
            stop(servers[which], sig)
            servers[which], ms = start(which, cfgs[which], ports[which], logs[which])
            wid = worker_id(ports[which])
            results.setdefault((case, which), []).append(ms)
            print(f"{case} round {r + 1} {which}: {ms:.1f} ms (worker ID {wid})", flush=True)
        # The ID each server just left passes its mark before the next kill.
        time.sleep(hold)
    for which in bins:
        stop(servers[which], signal.SIGTERM)

print()
print("| case | before (main): median [min-max] ms | after: median [min-max] ms | before / after |")
print("|---|---|---|---|")
for case in os.environ["CASES"].split():
    b, a = results[(case, "before")], results[(case, "after")]
    fmt = lambda v: f"{statistics.median(v):.0f} [{min(v):.0f}-{max(v):.0f}]"
    print(f"| {case} | {fmt(b)} | {fmt(a)} | {statistics.median(b) / statistics.median(a):.1f}x |")
PY
