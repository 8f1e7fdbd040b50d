//! A `snowflake` generator's keys and plan: its layout, worker lease and clock policies.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::clock::{Clock, MonotonicClock, SystemClock};
use snowdrift_core::generator::{Builder, MastodonTail, OnBackward, SnowflakeGenerator, mastodon};
use snowdrift_core::layout::Layout;
use snowdrift_store::worker::{LeaseConfig, WorkerNode, WorkerRegistry};

use super::lease as lease_plan;
use crate::config::{Config, GeneratorConfig, Kind, OnBackwardPolicy, Output};
use crate::error::core_reason;
use crate::kinds::{KindPlan, PlanError, Reached, StartContext};

use super::SnowflakeSource;

/// The longest `backward_wait`: `worker.max_mark_wait`'s bound.
const MAX_BACKWARD_WAIT: Duration = Duration::from_secs(600);

/// A `snowflake` generator: IDs under `layout`, issued only under the worker lease `lease`.
#[derive(Debug, Clone)]
pub struct SnowflakePlan {
    /// The bit layout.
    pub layout: Layout,
    /// Its name: a preset's, or `custom`.
    pub layout_name: String,
    /// The worker-ID lease.
    pub lease: LeaseConfig,
    /// Clock and sequence policies.
    pub options: SnowflakeOptions,
    /// The worker ID is leased only on this machine while the server listens beyond
    /// loopback: another machine could issue under the same ID.
    pub unverified: bool,
    /// `layout = "mastodon"`: the keyed hash added to each ID's sequence bits.
    pub tail: Option<Arc<MastodonTail>>,
}

/// A snowflake generator's options beyond its layout: the clock and sequence policies the
/// core generator takes, and how IDs are written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeOptions {
    /// IDs go out with their bits reversed within the layout's width.
    pub bit_reversed: bool,
    /// What a clock behind the last time used does, beyond the wait bound.
    pub on_backward: OnBackward,
    /// The wait bound (also the lease's `max_mark_wait`).
    pub backward_wait: Duration,
    /// Future time a burst may borrow.
    pub max_lead: Duration,
    /// Each tick's sequence starts below this, pseudo-randomly.
    pub random_sequence_start: Option<u64>,
}

impl SnowflakeOptions {
    /// The core generator's builder for `layout` with these policies; `seed` varies the
    /// random sequence starts between processes.
    pub fn builder(&self, layout: &Layout, seed: u64) -> Builder {
        let builder = SnowflakeGenerator::builder(layout.clone())
            .on_backward(self.on_backward)
            .backward_wait(self.backward_wait)
            .max_lead(self.max_lead);
        match self.random_sequence_start {
            Some(below) => builder.random_sequence_start(seed, below),
            None => builder,
        }
    }
}

impl KindPlan for SnowflakePlan {
    type Source = SnowflakeSource;
    const KINDS: &'static [Kind] = &[Kind::Snowflake];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &[
            "layout",
            "bits",
            "unit",
            "epoch",
            "backward_wait",
            "on_backward",
            "max_lead",
            "random_sequence_start",
            "output",
            "obfuscate_key",
            "obfuscate_bits",
            "table",
            "secret",
        ]
    }

    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        if g.layout.is_some() && g.bits.is_some() {
            return Err(PlanError::Whole(
                "give either layout (a preset) or bits (a custom layout), not both".into(),
            ));
        }
        let (layout, layout_name) = snowdrift_core::layout::resolve(
            g.layout.as_deref(),
            g.bits.as_deref(),
            g.unit.as_deref(),
            g.epoch.as_deref(),
        )
        .map_err(|e| PlanError::Whole(core_reason(e)))?;
        let tail = mastodon_tail(g, &layout_name, &layout).map_err(|(k, e)| PlanError::Key(k, e))?;
        let mut lease = lease_plan::lease(&config.worker, &g.name)
            .map_err(|e| PlanError::Whole(e.message().to_string()))?;
        lease_plan::check_split(&lease, &layout)
            .map_err(|e| PlanError::Whole(e.message().to_string()))?;
        let options =
            snowflake_options(config, g, &layout).map_err(|(key, e)| PlanError::Key(key, e))?;
        lease.max_mark_wait = options.backward_wait;
        let server = &config.server;
        let exposed = !server.listen.ip().is_loopback()
            || server.resp_listen.is_some_and(|a| !a.ip().is_loopback());
        Ok(SnowflakePlan {
            layout,
            layout_name,
            lease,
            options,
            unverified: exposed && lease_plan::machine_local(&config.worker),
            tail,
        })
    }

    fn kind(&self) -> Kind {
        Kind::Snowflake
    }

    fn layout(&self) -> Option<&Layout> {
        Some(&self.layout)
    }

    fn lease(&self) -> Option<&LeaseConfig> {
        Some(&self.lease)
    }

    async fn start(
        &self,
        name: &str,
        cx: &StartContext,
    ) -> Result<SnowflakeSource, snowdrift_store::Error> {
        let lease = &self.lease;
        if let Some(path) = lease.registry_url.strip_prefix("file://")
            && !path.starts_with('/')
        {
            tracing::warn!(
                generator = %name,
                path,
                "worker.path is relative: a server started from another directory on this \
                 machine would not see this one's worker leases; use an absolute path (the \
                 default is machine-wide)"
            );
        }
        if self.unverified {
            tracing::warn!(
                generator = %name,
                "the worker ID is leased only on this machine (worker.registry = file, or \
                 static/derived without worker.verify_with) while the server listens beyond \
                 loopback: a server on another machine with the same worker ID would issue \
                 the same IDs. Lease worker IDs on a coordinator (worker.registry = etcd, \
                 zookeeper, sql or redis; or worker.verify_with for static and derived IDs)"
            );
        }
        if let Some(backend) =
            crate::open_coordinator::registry(&lease.registry_url, &lease.namespace).await
        {
            // A warning, not a refusal (as tso's): a single machine runs its registry on
            // loopback without users, and refusing would stop every such setup.
            tracing::warn!(
                generator = %name,
                registry = %snowdrift_store::mask_url(&lease.registry_url),
                "worker IDs are leased on {backend}, which takes writes from clients without \
                 credentials: anyone who can reach it can forge or delete a lease or lower a \
                 mark and make two nodes issue the same IDs. Protect it ({}) unless nothing \
                 but this cluster can reach it",
                match backend {
                    "etcd" => "etcd users or client certificates: etcdctl auth enable; \
                               etcd://USER:PASSWORD@HOST:2379",
                    "ZooKeeper" => "a digest user and ACLs: zookeeper://USER:PASSWORD@HOST:2181",
                    _ => "requirepass or ACL users: redis://USER:PASSWORD@HOST:6379",
                }
            );
        }
        let mut seed = [0u8; 8];
        // Without randomness the starts are still spread over ticks, only alike
        // between processes.
        let _ = getrandom::fill(&mut seed);
        let builder = self.options.builder(&self.layout, u64::from_le_bytes(seed));
        let offset = crate::kinds::tso::oracle::test_clock_offset_ms()?;
        let clock = MonotonicClock::anchored_at(
            SystemClock.now_ms().saturating_add_signed(offset),
            std::time::Instant::now(),
        );
        let node = cx
            .keepers
            .spawn(WorkerNode::claim(lease.clone(), builder, clock))
            .await
            .map_err(|e| {
                snowdrift_store::Error::Unavailable(
                    format!("the lease keepers' thread failed: {e}").into(),
                )
            })??;
        Ok(SnowflakeSource::new(
            node,
            self.layout.clone(),
            self.layout_name.clone(),
            self.options,
            self.unverified,
        )
        .with_tail(self.tail.clone()))
    }

    async fn reach(&self, name: &str, seen: &mut Vec<String>) -> Vec<Reached> {
        let lease = &self.lease;
        // Generators leasing on one registry and namespace share it: reached once.
        let key = format!("{}\n{}", lease.registry_url, lease.namespace);
        if seen.contains(&key) {
            return Vec::new();
        }
        seen.push(key);
        let answer = Reached::bounded(WorkerRegistry::connect(
            &lease.registry_url,
            &lease.namespace,
        ))
        .await;
        vec![Reached::new(
            format!("worker registry of generator {name:?}"),
            &lease.registry_url,
            answer,
        )]
    }
}

/// The Mastodon tail of a `layout = "mastodon"` generator (keyed by `secret`, which it needs,
/// and `table`, by default the generator's name); `None` for any other layout, which takes
/// neither key. Or the key that is wrong and why.
fn mastodon_tail(
    g: &GeneratorConfig,
    layout_name: &str,
    layout: &Layout,
) -> Result<Option<Arc<MastodonTail>>, (&'static str, String)> {
    if layout_name != mastodon::PRESET {
        let shown = if layout_name == "custom" {
            "a custom layout (bits)".to_string()
        } else {
            format!("layout \"{layout_name}\"")
        };
        for (key, set) in [("secret", g.secret.is_some()), ("table", g.table.is_some())] {
            if set {
                return Err((
                    key,
                    format!(
                        "applies to layout = \"mastodon\" (the keyed hash of Mastodon's IDs), \
                         not to {shown}"
                    ),
                ));
            }
        }
        return Ok(None);
    }
    let Some(secret) = &g.secret else {
        return Err((
            "secret",
            "layout = \"mastodon\" needs a secret: the key of the hash that hides how many IDs \
             each millisecond held (at least 16 bytes; `openssl rand -hex 16` makes one)"
                .into(),
        ));
    };
    let table = g.table.as_deref().unwrap_or(&g.name);
    MastodonTail::new(layout, table, secret)
        .map(|tail| Some(Arc::new(tail)))
        .map_err(|e| {
            // The preset's sequence fits the hash, so the secret or the table is at fault.
            let key = if secret.len() < mastodon::MIN_SECRET_LEN {
                "secret"
            } else {
                "table"
            };
            (key, core_reason(e))
        })
}

/// The clock and sequence policies of a `snowflake` generator, or the key that is wrong and
/// why.
fn snowflake_options(
    config: &Config,
    g: &GeneratorConfig,
    layout: &Layout,
) -> Result<SnowflakeOptions, (&'static str, String)> {
    let on_backward = match g.on_backward {
        None | Some(OnBackwardPolicy::Extension) => OnBackward::Extension,
        Some(OnBackwardPolicy::Wait) => OnBackward::Wait,
        Some(OnBackwardPolicy::Refuse) => OnBackward::Refuse,
    };
    if g.on_backward == Some(OnBackwardPolicy::Extension) && layout.extension_bits() == 0 {
        return Err((
            "on_backward",
            "\"extension\" needs an extension field in the layout, and this one has none: \
             give bits = \"ext:2,time:...\" (2 extension bits absorb 3 clock steps or \
             restarts behind the mark), or use on_backward = \"wait\""
                .into(),
        ));
    }
    if let Some(wait) = g.backward_wait
        && wait > MAX_BACKWARD_WAIT
    {
        return Err((
            "backward_wait",
            format!(
                "{wait:?} is above {MAX_BACKWARD_WAIT:?}: a start that waits longer for its \
                 clock looks hung; set the clock right instead (give 0s to \
                 {MAX_BACKWARD_WAIT:?}, as worker.max_mark_wait)"
            ),
        ));
    }
    let max_lead = g.max_lead.unwrap_or(Duration::ZERO);
    let unit = Duration::from_millis(layout.unit_ms());
    if !max_lead.is_zero() && max_lead < unit {
        return Err((
            "max_lead",
            format!(
                "{max_lead:?} is less than one tick of the layout ({unit:?}), so it would \
                 borrow nothing; give at least {unit:?}, or 0s to wait for the next tick"
            ),
        ));
    }
    if max_lead >= config.worker.window {
        return Err((
            "max_lead",
            format!(
                "{max_lead:?} is not below worker.window ({:?}): the high-water mark is \
                 written that far ahead of the clock and must cover borrowed time; lower \
                 max_lead or raise worker.window",
                config.worker.window
            ),
        ));
    }
    let seq_max = snowdrift_core::layout::mask(layout.sequence_bits());
    if let Some(below) = g.random_sequence_start
        && (below == 0 || below > seq_max)
    {
        return Err((
            "random_sequence_start",
            format!(
                "{below} is not between 1 and {seq_max}: each tick's sequence starts below it, \
                 and this layout's sequence holds {} values (Leaf uses 100)",
                seq_max + 1
            ),
        ));
    }
    Ok(SnowflakeOptions {
        bit_reversed: g.output == Some(Output::BitReversed),
        on_backward,
        backward_wait: g.backward_wait.unwrap_or(config.worker.max_mark_wait),
        max_lead,
        random_sequence_start: g.random_sequence_start,
    })
}
