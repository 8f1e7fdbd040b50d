//! `layout = "mastodon"` checked by Ruby, the language of Mastodon's `lib/mastodon/
//! snowflake.rb`: its formula on Ruby's `Digest::MD5` (the first four hex digits of
//! `MD5(table + secret + time_part.to_s)`, plus the sequence value, `& 65535`) gives the
//! IDs `MastodonTail` gives without worker bits, and every ID that two `snowdrift serve`
//! processes and `snowdrift next` issue under the preset is that formula with the worker
//! bits in `time_part`: within each millisecond of each worker the sequence numbers Ruby
//! takes back out are 0, 1, 2... with no gap and no repeat.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use snowdrift_core::generator::MastodonTail;
use snowdrift_core::layout::Layout;
use snowdrift_testkit::unique_name;

use crate::common::{Served, serve_command};

const SECRET: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

/// Lines `table secret ms seq id`: Mastodon's ID for that millisecond and sequence value
/// must be `id`. Prints how many were checked.
const MASTODON: &str = r##"
require "digest"
n = 0
STDIN.each_line do |line|
  table, secret, ms, seq, id = line.split(" ")
  time_part = ms.to_i << 16
  base = Digest::MD5.hexdigest(table + secret + time_part.to_s)[0, 4].to_i(16)
  want = time_part | ((base + seq.to_i) & 65535)
  raise "#{line.strip}: Mastodon's ID is #{want}" unless want == id.to_i
  n += 1
end
puts n
"##;

/// Lines of IDs under the preset (worker 6 bits, sequence 10 bits), with the table and
/// secret as arguments: each ID's sequence is taken back out with Mastodon's base of the ID
/// without its sequence bits; per millisecond and worker they must count 0, 1, 2... Prints
/// the IDs and the milliseconds-and-workers checked.
const PRESET: &str = r##"
require "digest"
require "set"
table, secret = ARGV
seen = Set.new
groups = Hash.new { |h, k| h[k] = [] }
STDIN.each_line do |line|
  id = line.to_i
  raise "#{id} twice" unless seen.add?(id)
  time_part = id & ~1023
  base = Digest::MD5.hexdigest(table + secret + time_part.to_s)[0, 4].to_i(16)
  groups[time_part] << (((id & 1023) - base) & 1023)
end
groups.each do |time_part, seqs|
  ms, worker = time_part >> 16, (time_part >> 10) & 63
  sorted = seqs.sort
  gap = (0...sorted.size).find { |i| sorted[i] != i }
  if gap
    raise "millisecond #{ms} of worker #{worker}: #{seqs.size} IDs, sequence #{gap} missing " \
          "(found #{sorted[gap]} there)"
  end
end
puts "#{seen.size} #{groups.size}"
"##;

fn ruby(script: &str, args: &[&str], input: &str) -> String {
    let mut child = Command::new("ruby")
        .args(["-e", script, "--"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ruby on the machine (scripts/services installs Debian's)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Ruby disagrees:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// SplitMix64, for test inputs that differ from run to run and can be replayed by seed.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Without worker bits (Mastodon's one database), `MastodonTail` gives Mastodon's IDs, for
/// random milliseconds, sequence values (wraps included), tables and secrets.
#[test]
fn ruby_computes_the_ids_mastodon_tail_computes() {
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).unwrap();
    let seed = u64::from_le_bytes(seed);
    let mut state = seed;
    let layout = Layout::from_spec("time:48,seq:16", 1, 0).unwrap();
    let mut lines = String::new();
    for (table, secret) in [
        ("statuses", SECRET),
        ("accounts", "0123456789abcdef0123456789abcdef"),
        ("media_attachments", "another-secret-of-some-length"),
    ] {
        let tail = MastodonTail::new(&layout, table, secret).unwrap();
        for _ in 0..2000 {
            // Milliseconds from 1970 to 2200, and the edges of the sequence.
            let ms = splitmix(&mut state) % 7_258_118_400_000;
            let seq = match splitmix(&mut state) % 4 {
                0 => 0,
                1 => 65_535,
                _ => splitmix(&mut state) % 65_536,
            };
            let id = tail.apply((ms << 16) | seq);
            lines.push_str(&format!("{table} {secret} {ms} {seq} {id}\n"));
        }
    }
    let checked = ruby(MASTODON, &[], &lines);
    assert_eq!(checked, "6000", "seed {seed}");
}

/// Two servers on one machine's worker leases (workers 0 and 1) and `snowdrift next
/// --worker 9`: Ruby finds no ID twice, and every millisecond of every worker counting from
/// 0 under the hash.
#[test]
fn ruby_reads_what_the_servers_and_the_cli_issue() {
    let dir = std::env::temp_dir().join(unique_name("mastodon-ruby"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\nurl = \"sqlite://{}\"\n[worker]\npath = \"{}\"\n\
             [[generator]]\nname = \"statuses\"\nkind = \"snowflake\"\nlayout = \"mastodon\"\n\
             secret = \"{SECRET}\"\n",
            dir.join("ids.db").display(),
            dir.join("workers").display()
        ),
    )
    .unwrap();
    let servers: Vec<Served> = (0..2)
        .map(|_| {
            let mut cmd = serve_command();
            cmd.args(["--listen", "127.0.0.1:0", "--config"])
                .arg(&config);
            Served::start(cmd)
        })
        .collect();
    let mut workers = Vec::new();
    for s in &servers {
        s.wait_ready();
        workers.push(s.worker_of("statuses")["worker_id"].as_u64().unwrap());
    }
    workers.sort_unstable();
    assert_eq!(workers, [0, 1]);
    let ids: Vec<String> = std::thread::scope(|scope| {
        let asks: Vec<_> = servers
            .iter()
            .flat_map(|s| [(s, 1000), (s, 1)])
            .map(|(s, count)| {
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    for _ in 0..if count == 1 { 200 } else { 20 } {
                        let (status, body) =
                            s.get(&format!("/v1/ids/statuses?count={count}"), None);
                        assert_eq!(status, 200, "{body}");
                        let v: Value = serde_json::from_str(&body).unwrap();
                        ids.extend(
                            v["ids"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|id| id.as_str().unwrap().to_string()),
                        );
                    }
                    ids
                })
            })
            .collect();
        asks.into_iter().flat_map(|a| a.join().unwrap()).collect()
    });
    assert_eq!(ids.len(), 2 * (20 * 1000 + 200));
    drop(servers);
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "next",
            "--layout",
            "mastodon",
            "--mastodon-table",
            "statuses",
            "--worker",
            "9",
            "-n",
            "5000",
        ])
        .env("SNOWDRIFT_MASTODON_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli = String::from_utf8(out.stdout).unwrap();
    assert_eq!(cli.lines().count(), 5000);
    for id in cli.lines().take(3) {
        let worker = (id.parse::<u64>().unwrap() >> 10) & 63;
        assert_eq!(worker, 9, "{id}");
    }
    let input = format!("{}\n{cli}", ids.join("\n"));
    let report = ruby(PRESET, &["statuses", SECRET], &input);
    let (checked, groups) = report.split_once(' ').unwrap();
    assert_eq!(checked, (ids.len() + 5000).to_string(), "{report}");
    assert!(groups.parse::<u64>().unwrap() >= 3, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}
