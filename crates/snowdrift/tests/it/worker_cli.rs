//! `snowdrift next --registry URL` end to end, several processes against real coordinators:
//! simultaneous starts get distinct worker IDs; kill -9 and a restart with the clock set
//! back waits (or refuses past the bound) and repeats nothing; a second process on a file
//! registry is refused; a full node space is a clear error; and 3 processes x 2 threads
//! issue over 10 million IDs through a kill -9 restart and a coordinator freeze with no
//! duplicate, IDs strictly increasing per worker epoch, and none issued while nobody
//! could hold a lease.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowdrift_testkit::{FaultProxy, IdChecker, unique_name, urls};

/// How long a test waits for something that must happen before it fails. Generous: a
/// loaded CI machine is slow, and waiting longer never hides a bug.
const PATIENCE: Duration = Duration::from_secs(120);

/// The Twitter layout's epoch; an ID's time is `(id >> 22) + epoch`.
const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn file_registry() -> String {
    let dir = std::env::temp_dir().join(unique_name("snowdrift_cli_workers"));
    format!("file://{}", dir.display())
}

fn command(registry: &str, ns: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_snowdrift"));
    c.args([
        "next",
        "--registry",
        registry,
        "--namespace",
        ns,
        "--annotate",
    ])
    .args(["--ttl", "2s", "--window", "1s", "--publish-every", "500ms"])
    .args(extra)
    .env_remove("SNOWDRIFT_WORKER__URL")
    .env_remove("SNOWDRIFT_TEST_CLOCK_OFFSET_MS");
    c
}

/// One annotated line: `THREAD WORKER EPOCH ID`.
#[derive(Debug, Clone, Copy)]
struct Line {
    thread: u64,
    worker: u64,
    epoch: u64,
    id: u64,
}

fn parse(line: &str) -> Option<Line> {
    let mut it = line.split(' ').map(|f| f.parse::<u64>().ok());
    Some(Line {
        thread: it.next()??,
        worker: it.next()??,
        epoch: it.next()??,
        id: it.next()??,
    })
}

/// A running `snowdrift next` whose stdout lines go to a checker as they come, each source
/// being `{name}/{thread}/{worker}/{epoch}`.
struct Proc {
    child: Child,
    reader: Option<JoinHandle<Stats>>,
    /// Drains stderr (so a chatty process never blocks on a full pipe) and returns it.
    errors: Option<JoinHandle<String>>,
    count: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
struct Stats {
    /// The distinct times (ms since 1970) of the IDs seen.
    times: BTreeSet<u64>,
    /// The worker IDs seen.
    workers: BTreeSet<u64>,
}

impl Proc {
    fn spawn(name: &str, mut cmd: Command, checker: Arc<IdChecker>) -> Proc {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let count = Arc::new(AtomicU64::new(0));
        let (n, name_owned) = (count.clone(), name.to_string());
        let reader = std::thread::spawn(move || {
            let mut stats = Stats::default();
            // Per (thread, worker, epoch): IDs not yet handed to the checker.
            let mut batches: HashMap<(u64, u64, u64), Vec<u64>> = HashMap::new();
            let flush = |key: (u64, u64, u64), ids: Vec<u64>| {
                let source = format!("{name_owned}/{}/{}/{}", key.0, key.1, key.2);
                checker.record(&source, ids);
            };
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                // A line cut by kill -9 has no newline: it was never fully printed.
                let Some(text) = line.strip_suffix('\n') else {
                    break;
                };
                let l = parse(text).unwrap_or_else(|| panic!("bad line {text:?}"));
                stats.times.insert((l.id >> 22) + TWITTER_EPOCH_MS);
                stats.workers.insert(l.worker);
                let key = (l.thread, l.worker, l.epoch);
                let batch = batches.entry(key).or_default();
                batch.push(l.id);
                if batch.len() >= 1 << 16 {
                    flush(key, std::mem::take(batch));
                }
                n.fetch_add(1, Ordering::Relaxed);
            }
            for (key, ids) in batches {
                flush(key, ids);
            }
            stats
        });
        Proc {
            child,
            reader: Some(reader),
            errors: Some(errors),
            count,
        }
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn kill9(&mut self) -> Stats {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reader.take().unwrap().join().unwrap()
    }

    /// Kills the process and returns the end of what it wrote to stderr, for a failure
    /// message.
    fn stderr_after_kill(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = self
            .errors
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Waits for the process to end by itself; returns its stats and stderr.
    fn finish(&mut self) -> (Stats, bool, String) {
        let status = self.child.wait().unwrap();
        let err = self.errors.take().unwrap().join().unwrap();
        (
            self.reader.take().unwrap().join().unwrap(),
            status.success(),
            err,
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs a command to its end; returns (success, stdout, stderr).
fn run(mut cmd: Command) -> (bool, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn processes_starting_together_get_distinct_worker_ids() {
    for registry in [
        file_registry(),
        urls::etcd(),
        urls::zookeeper(),
        urls::postgres(),
        urls::redis(),
    ] {
        let ns = unique_name("cli_w");
        // The first run creates the table (or root znode), so the race is for IDs only.
        let (ok, _, err) = run(command(&registry, &ns, &["-n", "1"]));
        assert!(ok, "{registry}: {err}");
        let checker = Arc::new(IdChecker::new());
        // Long runs, so all five hold their IDs at once.
        let mut procs: Vec<Proc> = (0..5)
            .map(|i| {
                let cmd = command(&registry, &ns, &["-n", "1000000000"]);
                Proc::spawn(&format!("p{i}"), cmd, checker.clone())
            })
            .collect();
        let start = Instant::now();
        while !procs.iter().all(|p| p.count() > 0) {
            if start.elapsed() > PATIENCE {
                // Say which registry and which process is stuck, with what it wrote.
                let counts: Vec<u64> = procs.iter().map(Proc::count).collect();
                let stderr: Vec<String> = procs
                    .iter_mut()
                    .enumerate()
                    .map(|(i, p)| format!("p{i}:\n{}", p.stderr_after_kill()))
                    .collect();
                panic!(
                    "{registry}: not all five issued within {PATIENCE:?}; IDs so far {counts:?}\n{}",
                    stderr.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut seen = BTreeSet::new();
        for p in &mut procs {
            let workers = p.kill9().workers;
            assert_eq!(workers.len(), 1, "{registry}: one worker ID per process");
            seen.extend(workers);
        }
        // Distinct: they all held their IDs at the same time.
        assert_eq!(seen.len(), 5, "{registry}: worker IDs {seen:?}");
        checker.assert_clean();
    }
}

/// kill -9, then a restart with the clock set back by 1.5 s: it waits until its clock
/// passes the high-water mark, and every ID it issues is greater than every ID the killed
/// run printed. Set back by a minute with a 2 s bound, it refuses and names the gap.
#[test]
fn kill9_and_a_restart_with_the_clock_set_back_repeat_nothing() {
    for registry in [file_registry(), urls::postgres()] {
        let ns = unique_name("cli_w");
        let checker = Arc::new(IdChecker::new());
        let args = [
            "--worker-source",
            "static",
            "--worker",
            "9",
            "-n",
            "1000000000",
        ];
        let mut first = Proc::spawn("first", command(&registry, &ns, &args), checker.clone());
        wait_until("the first run to print IDs", || first.count() > 200_000);
        let first_stats = first.kill9();
        let first_max = first_stats.times.last().copied().unwrap();
        // On a coordinator the killed node's lease runs out after its ttl; until then a
        // restart is refused as the ID's live holder.
        let started = Instant::now();
        let (second, stats) = loop {
            let mut cmd = command(
                &registry,
                &ns,
                &["--worker-source", "static", "--worker", "9", "-n", "50000"],
            );
            cmd.env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "-1500");
            let mut p = Proc::spawn("second", cmd, checker.clone());
            let (stats, ok, err) = p.finish();
            if ok {
                break (p, stats);
            }
            assert!(err.contains("is held by"), "{registry}: {err}");
            assert!(
                started.elapsed() < PATIENCE,
                "the killed node's lease never ran out"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        drop(second);
        let second_min = stats.times.first().copied().unwrap();
        assert!(
            second_min > first_max,
            "{registry}: restart issued at {second_min}, not after the killed run's {first_max}"
        );
        checker.assert_clean();

        let mut cmd = command(
            &registry,
            &ns,
            &[
                "--worker-source",
                "static",
                "--worker",
                "9",
                "-n",
                "10",
                "--max-mark-wait",
                "2s",
            ],
        );
        cmd.env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "-60000");
        let (ok, out, err) = run(cmd);
        assert!(
            !ok && out.is_empty(),
            "{registry}: a clock a minute back must be refused"
        );
        assert!(
            err.contains("ahead of this node's clock"),
            "{registry}: {err}"
        );
    }
}

#[test]
fn a_second_process_on_a_file_registry_is_refused() {
    let registry = file_registry();
    let ns = unique_name("cli_w");
    let checker = Arc::new(IdChecker::new());
    let args = [
        "--worker-source",
        "static",
        "--worker",
        "4",
        "-n",
        "1000000000",
    ];
    let first = Proc::spawn("first", command(&registry, &ns, &args), checker);
    wait_until("the first process to print IDs", || first.count() > 0);
    let (ok, out, err) = run(command(&registry, &ns, &args));
    assert!(!ok && out.is_empty(), "a second holder of worker ID 4 ran");
    assert!(err.contains("worker ID 4 is held by"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // Another ID on the same registry is fine.
    let (ok, _, err) = run(command(
        &registry,
        &ns,
        &["--worker-source", "static", "--worker", "5"],
    ));
    assert!(ok, "{err}");
}

#[test]
fn a_full_node_space_is_a_clear_error() {
    let ns = unique_name("cli_w");
    let registry = urls::redis();
    // One node bit: two worker IDs.
    let bits = ["--bits", "time:41,worker:1,seq:12", "-n", "1000000000"];
    let checker = Arc::new(IdChecker::new());
    let a = Proc::spawn("a", command(&registry, &ns, &bits), checker.clone());
    let b = Proc::spawn("b", command(&registry, &ns, &bits), checker);
    wait_until("two holders", || a.count() > 0 && b.count() > 0);
    let (ok, _, err) = run(command(&registry, &ns, &bits));
    assert!(!ok);
    assert!(err.contains("all 2 worker IDs are held"), "{err}");
}

#[test]
fn a_refused_password_is_named_and_never_printed() {
    let ns = unique_name("cli_w");
    // The local etcd has no auth: it refuses any user, which the error must say without
    // the password.
    let registry = urls::etcd().replacen("etcd://", "etcd://snowdrift:hunter2@", 1);
    let (ok, _, err) = run(command(&registry, &ns, &["-n", "1"]));
    assert!(!ok);
    assert!(err.contains("etcd://snowdrift:***@"), "{err}");
    assert!(err.contains("authentication"), "{err}");
    assert!(!err.contains("hunter2"), "the password is printed: {err}");
}

/// The end-to-end run: 3 processes x 2 threads on one etcd reached through a fault proxy,
/// one process killed with -9 and restarted, then the coordinator frozen (black hole)
/// for longer than the lease, then healed. At least 10 million IDs: no duplicate, strictly
/// increasing per worker epoch, and no ID stamped in the stretch when no lease could be
/// held (from the freeze + ttl - margin to the heal).
#[test]
fn three_processes_two_threads_ten_million_ids_through_restarts_and_a_freeze() {
    const TOTAL: u64 = 10_000_000;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (proxy, registry) = rt
        .block_on(FaultProxy::start_for_url(&urls::etcd()))
        .unwrap();
    let ns = unique_name("cli_e2e");
    let checker = Arc::new(IdChecker::new());
    let args = ["--threads", "2", "-n", "1000000000"];
    let mut procs: Vec<Proc> = (0..3)
        .map(|i| {
            Proc::spawn(
                &format!("p{i}"),
                command(&registry, &ns, &args),
                checker.clone(),
            )
        })
        .collect();
    let total = |procs: &[Proc], done: u64| done + procs.iter().map(Proc::count).sum::<u64>();
    let mut done = 0;
    let mut all_stats = Vec::new();

    wait_until("2M IDs", || total(&procs, done) >= 2_000_000);
    // kill -9 one process and start it again: it takes a free ID, or its own once the
    // lease ran out, after the ID's mark.
    let killed = procs[1].count();
    all_stats.push(procs[1].kill9());
    done += killed;
    procs[1] = Proc::spawn("p1b", command(&registry, &ns, &args), checker.clone());

    wait_until("5M IDs", || total(&procs, done) >= 5_000_000);
    let frozen_at = now_ms();
    proxy.black_hole();
    // Longer than the ttl: every lease expires on etcd meanwhile.
    std::thread::sleep(Duration::from_millis(3_500));
    let healed_at = now_ms();
    proxy.heal();
    let at_heal = total(&procs, done);
    let start = Instant::now();
    while total(&procs, done) < TOTAL.max(at_heal + 1_000_000) {
        if start.elapsed() > PATIENCE {
            let counts: Vec<u64> = procs.iter().map(Proc::count).collect();
            let errs: Vec<String> = procs.iter_mut().map(Proc::stderr_after_kill).collect();
            panic!(
                "timed out waiting for 10M IDs after the heal: counts {counts:?}, {done} from killed runs; stderr:\n{}",
                errs.join("\n---\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in &mut procs {
        all_stats.push(p.kill9());
    }
    let report = checker.assert_clean();
    assert!(report.ids >= TOTAL, "only {} IDs", report.ids);
    // ttl 2 s minus the default margin (ttl / 5): the latest any deadline could be after
    // the last renewal sent before the freeze.
    let latest_deadline = frozen_at + 1_600;
    let in_gap: Vec<u64> = all_stats
        .iter()
        .flat_map(|s| s.times.range(latest_deadline..healed_at).copied())
        .collect();
    assert!(
        in_gap.is_empty(),
        "IDs stamped between the last possible deadline {latest_deadline} and the heal {healed_at}: {:?}",
        &in_gap[..in_gap.len().min(10)]
    );
    eprintln!(
        "{} IDs from {} sources, {} processes started; none duplicated",
        report.ids, report.sources, 4
    );
    drop(rt);
}
