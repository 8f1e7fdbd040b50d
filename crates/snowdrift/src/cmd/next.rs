//! `snowdrift next`: generate IDs in this process and print them, one per line.

use std::io::{BufWriter, Write};

use anyhow::{Context, Result, bail};
use snowdrift_core::codec::IdFormat;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_proto::Kind;

pub(crate) mod leased;

use crate::layout_args::LayoutArgs;
use crate::mastodon_args::MastodonArgs;
use crate::obfuscate_args::ObfuscateArgs;
use crate::store_args::StoreArgs;
use crate::uuid_args::UuidArgs;

/// The kinds `next` makes in this process, in the order `--help` lists them, with what each
/// gives. `--kind` accepts these alone; the others need a server (`--server`).
const LOCAL_KINDS: &[(Kind, &str)] = &[
    (Kind::Snowflake, "64-bit time-ordered ID under a bit layout"),
    (
        Kind::Uuid1,
        "Time-based UUID (RFC 9562 version 1): 100 ns time, clock sequence, node (--node)",
    ),
    (
        Kind::Uuid2,
        "DCE Security UUID (version 2): v1 with --domain and --local-id over the low time bits",
    ),
    (
        Kind::Uuid3,
        "Name-based UUID (version 3, MD5) of --input under --namespace",
    ),
    (Kind::Uuid4, "Random UUID (RFC 9562 version 4)"),
    (
        Kind::Uuid5,
        "Name-based UUID (version 5, SHA-1) of --input under --namespace",
    ),
    (
        Kind::Uuid6,
        "Time-ordered UUID (version 6): version 1 with the time's bytes in order (--node)",
    ),
    (
        Kind::Uuid7,
        "Time-ordered UUID (RFC 9562 version 7), monotonic within the process",
    ),
    (
        Kind::Ulid,
        "Monotonic ULID (26 Crockford base32 characters)",
    ),
    (Kind::Objectid, "MongoDB ObjectId (24 hex characters)"),
    (
        Kind::Typeid,
        "TypeID (spec v0.3): --prefix, '_' and a UUID v7 in 26 base32 characters, monotonic",
    ),
    (
        Kind::Ksuid,
        "KSUID (segmentio): 4 bytes of seconds since 2014 and 16 random bytes, 27 base62 characters",
    ),
    (
        Kind::Xid,
        "xid (rs/xid): seconds, machine ID (--machine-id), process ID, counter; 20 characters",
    ),
    (
        Kind::Nanoid,
        "Nano ID: --size random characters of --alphabet (--explain: the collision risk)",
    ),
    (
        Kind::Cuid2,
        "cuid2: a letter and a SHA3 of time, salt, counter and fingerprint (--length)",
    ),
    (
        Kind::Segment,
        "The next IDs of a segment tag (Leaf's segment mode), claimed from --store",
    ),
];

/// `--kind`: one of [`LOCAL_KINDS`] by its name, refused by clap with the list of them
/// otherwise (a server-only kind such as tso included).
fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(
        LOCAL_KINDS
            .iter()
            .map(|&(kind, help)| clap::builder::PossibleValue::new(kind.as_str()).help(help)),
    )
    .try_map(|name| name.parse::<Kind>())
}

/// Generate IDs locally and print one per line.
///
/// Snowflake IDs are made in this process with the node ID from --worker. Two processes
/// using the same --worker in the same millisecond can produce the same ID: give each
/// process its own --worker, run under a lease with --registry URL (the worker ID is
/// claimed on the registry, issuing stops if the lease is lost, and a restart waits until
/// its clock passes the ID's high-water mark), or ask a running `snowdrift serve`.
///
/// Segment IDs (--kind segment --tag T --store URL) are claimed from the store a segment
/// at a time, so any number of processes can take IDs of one tag at once without repeats.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift next -n 5\n  snowdrift next --layout sonyflake --worker 7 --format base62\n  SNOWDRIFT_OBFUSCATE_KEY=5f1e0c9a27b34d6e8a91c2d3e4f50617 snowdrift next -n 3 --format obfuscated-base62\n  snowdrift next --bits time:39,worker:12,seq:12 --unit 10ms --epoch 2024-01-01\n  snowdrift next --kind uuid7 -n 3\n  snowdrift next --kind uuid6 --node 02:00:5e:10:00:01 -n 3\n  snowdrift next --kind uuid5 --namespace dns --input example.com\n  snowdrift next --kind uuid2 --domain group --local-id 100\n  snowdrift next --kind typeid --prefix user -n 3\n  snowdrift next --kind ksuid\n  snowdrift next --kind nanoid --alphabet 0123456789abcdef --size 12 --explain --rate 1000\n  snowdrift next --kind segment --tag order --store sqlite://snowdrift.db -n 100\n  snowdrift next --registry postgres://root@127.0.0.1/test -n 1000000 --threads 2\n  snowdrift next --registry file:///var/lib/snowdrift --worker-source static --worker 3\n  snowdrift next --server http://10.0.0.1:8080,http://10.0.0.2:8080 order -n 1000"
)]
pub struct Args {
    /// How many IDs to print.
    #[arg(short = 'n', long = "count", default_value_t = 1, value_name = "COUNT")]
    count: u64,
    /// Which kind of ID.
    #[arg(long, value_parser = kind_parser(), default_value_t = Kind::Snowflake)]
    kind: Kind,
    #[command(flatten)]
    layout: LayoutArgs,
    #[command(flatten)]
    mastodon: MastodonArgs,
    /// Node ID: all node fields' bits together, high field first (for twitter,
    /// datacenter * 32 + worker). Must fit the layout's node bits.
    /// Default 0; under --registry, the static worker ID to claim.
    #[arg(long, value_name = "N")]
    worker: Option<u64>,
    /// Output of 64-bit IDs: decimal, hex, base62, crockford32, tsid (13
    /// characters, TSID's string form), sqids or friendly
    /// (snowflake only); or of the IDs obfuscated under --obfuscate-key: obfuscated
    /// (decimal), obfuscated-hex, obfuscated-base62, obfuscated-crockford32, obfuscated-tsid or
    /// obfuscated-sqids.
    #[arg(long, value_name = "FMT")]
    format: Option<IdFormat>,
    #[command(flatten)]
    obfuscation: ObfuscateArgs,
    #[command(flatten)]
    uuid: UuidArgs,
    /// --kind typeid: the type prefix, up to 63 characters of a-z and _ starting and ending
    /// with a letter ("user" gives user_01h455vb4pex5vsknk084sn02q); "" for none.
    #[arg(long, value_name = "PREFIX", required_if_eq("kind", "typeid"))]
    prefix: Option<String>,
    #[command(flatten)]
    text: Box<crate::cmd::next_text::TextIdArgs>,
    /// The segment tag to take IDs from (--kind segment).
    #[arg(long, value_name = "TAG", required_if_eq("kind", "segment"))]
    tag: Option<String>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    lease: leased::LeaseArgs,
    /// Ask running servers instead of generating here: their URLs, comma-separated
    /// (http://HOST:PORT or https://...), through the client crate, which caches a batch and
    /// fails over between them. Takes the generator or tag NAME; SNOWDRIFT_TOKEN is sent as
    /// the bearer token when set.
    #[arg(
        long,
        value_name = "URL[,URL...]",
        value_delimiter = ',',
        requires = "name",
        conflicts_with_all = ["kind", "layout", "bits", "worker", "format", "tag", "registry", "node", "input", "domain", "local_id", "prefix", "mastodon_table"]
    )]
    server: Vec<String>,
    /// With --server: the generator or segment tag to take IDs from.
    #[arg(value_name = "NAME", requires = "server")]
    name: Option<String>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.count == 0 {
        bail!("--count must be at least 1");
    }
    if let Some(name) = &args.name {
        return from_servers(&args.server, name, args.count);
    }
    if args.lease.registry.is_some() {
        // Before stdout is locked below: the generating threads write to it themselves.
        if args.kind != Kind::Snowflake {
            bail!(
                "--registry leases a worker ID for snowflake IDs; drop it for --kind {}",
                args.kind.as_str()
            );
        }
        let (layout, name) = args.layout.resolve(None)?;
        let tail = args.mastodon.tail(&name, &layout)?;
        let codec = args
            .obfuscation
            .codec(args.format.unwrap_or_default(), Some(&layout))?;
        return leased::print(
            &args.lease,
            args.worker,
            layout,
            tail.as_ref(),
            &codec,
            args.count,
        )
        .with_context(|| format!("generating {name} IDs under a lease"));
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.kind == Kind::Segment {
        let Some(tag) = &args.tag else {
            bail!("--kind segment needs --tag TAG");
        };
        let codec = match args.format {
            Some(format) => Some(args.obfuscation.codec(format, None)?),
            None => None,
        };
        return crate::cmd::next_segment::print(
            &args.store,
            tag,
            args.count,
            codec.as_ref(),
            &mut out,
        );
    }
    let uuid = args
        .uuid
        .resolve(args.kind, args.count, args.lease.namespace.as_deref())?;
    if args.prefix.is_some() && args.kind != Kind::Typeid {
        bail!(
            "--prefix applies to --kind typeid, not {}",
            args.kind.as_str()
        );
    }
    args.text.check(args.kind)?;
    if args.kind != Kind::Snowflake {
        if args.format.is_some() {
            let kind = args.kind.as_str();
            bail!(
                "--format applies to 64-bit snowflake IDs; {kind} IDs have one standard text form"
            );
        }
        if crate::cmd::next_text::prints(args.kind) {
            return crate::cmd::next_text::print(args.kind, args.count, &args.text, &mut out);
        }
        return crate::cmd::next_kinds::print(
            args.kind,
            args.count,
            uuid,
            args.prefix.as_deref(),
            &mut out,
        );
    }
    let (layout, name) = args.layout.resolve(None)?;
    let tail = args.mastodon.tail(&name, &layout)?;
    let clock = crate::clock::process_clock()?;
    let generator = SnowflakeGenerator::builder(layout.clone())
        .node_id(args.worker.unwrap_or(0))
        .context("--worker")?
        .build(clock)?;
    let codec = args
        .obfuscation
        .codec(args.format.unwrap_or_default(), Some(&layout))?;
    let mut left = args.count;
    while left > 0 {
        let block = generator
            .next_block(left)
            .with_context(|| format!("generating {name} IDs"))?;
        match &tail {
            None => {
                for id in block {
                    writeln!(out, "{}", codec.encode(id)?)?;
                }
            }
            Some(tail) => {
                for id in tail.ids(&block) {
                    writeln!(out, "{}", codec.encode(id)?)?;
                }
            }
        }
        left -= block.len();
    }
    out.flush()?;
    Ok(())
}

/// `count` IDs of `name` from the servers at `endpoints`, through the client crate. Every
/// batch passes the client's checks before an ID of it is printed (no ID the client already
/// received for the name, no run that wraps past 2^64 - 1); a batch the client refused means
/// a server repeated IDs or answered garbage, which ends the command with an error (exit 1)
/// even when the other servers made up the count: whoever ran it must look at that server.
fn from_servers(endpoints: &[String], name: &str, count: u64) -> Result<()> {
    let mut builder =
        snowdrift_client::blocking::Client::builder().endpoints(endpoints.iter().cloned());
    if let Ok(token) = std::env::var("SNOWDRIFT_TOKEN") {
        builder = builder.token(token);
    }
    let client = builder.build()?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut left = count;
    let mut printed = 0u64;
    while left > 0 {
        let n = left.min(10_000);
        match client.next_n(name, n as usize) {
            Ok(ids) => {
                for id in ids {
                    writeln!(out, "{id}")?;
                }
            }
            // A text kind: the same, one string at a time from the cache.
            Err(e) if e.kind() == snowdrift_client::ErrorKind::WrongKind => {
                for _ in 0..n {
                    writeln!(out, "{}", client.next_text(name)?)?;
                }
            }
            Err(e) => {
                out.flush()?;
                return Err(e).with_context(|| {
                    format!("IDs of {name:?} from the servers ({printed} printed before this)")
                });
            }
        }
        printed += n;
        left -= n;
    }
    out.flush()?;
    let refused = client.stats(name).map_or(0, |s| s.refused);
    if refused > 0 {
        let why = client
            .endpoints()
            .into_iter()
            .filter_map(|e| e.last_error)
            .collect::<Vec<_>>()
            .join("; ");
        bail!(
            "{refused} batch(es) of {name:?} were refused because a server repeated IDs or \
             answered a broken run ({why}); the {printed} IDs printed passed the client's \
             check, but that server must not be used"
        );
    }
    Ok(())
}
