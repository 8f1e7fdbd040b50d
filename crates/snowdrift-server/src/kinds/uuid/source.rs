//! The UUID versions a `[[generator]]` configures: v1 and v6 (time, clock sequence and
//! node), v2 (DCE Security) and v3/v5, whose UUID is that of a name the request brings.

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::uuid::v2::{DceSecurityGenerator, PER_WINDOW};
use snowdrift_core::kinds::uuid::{self as uuid_kind, GregorianUuidGenerator, Uuid};

use serde_json::Value;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::obfuscate::Obfuscator;

use super::UuidPlan;
use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{IdSource, Ids, takes_no_input};

/// A generator of UUID v1, v2, v3, v5 or v6.
#[derive(Debug)]
pub enum UuidSource {
    /// v1 or v6 (`kind`): every UUID its own 100 ns timestamp within this process.
    Gregorian {
        /// [`Kind::Uuid1`] or [`Kind::Uuid6`].
        kind: Kind,
        /// The generator, with its node ID and clock sequence.
        generator: GregorianUuidGenerator<MonotonicClock>,
    },
    /// v2: 64 UUIDs per time window of 7 min 9.5 s.
    Dce(DceSecurityGenerator<MonotonicClock>),
    /// v3 or v5 (`kind`) under `namespace`: one UUID per name.
    Named {
        /// [`Kind::Uuid3`] or [`Kind::Uuid5`].
        kind: Kind,
        /// The namespace.
        namespace: Uuid,
    },
}

impl UuidSource {
    /// The source `plan` describes, with a random clock sequence and, unless configured, a
    /// random node ID; `None` when the operating system gives no randomness (two processes
    /// could then share a node ID and clock sequence, so the server refuses to start).
    pub fn new(plan: &UuidPlan) -> Option<Self> {
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).ok()?;
        let random_node = [seed[0], seed[1], seed[2], seed[3], seed[4], seed[5]];
        let clock_seq = u16::from_le_bytes([seed[6], seed[7]]);
        Some(match *plan {
            UuidPlan::Gregorian { kind, node } => UuidSource::Gregorian {
                kind,
                generator: match node {
                    Some(node) => {
                        GregorianUuidGenerator::with_node(MonotonicClock::new(), node, clock_seq)
                    }
                    None => {
                        GregorianUuidGenerator::new(MonotonicClock::new(), random_node, clock_seq)
                    }
                },
            },
            UuidPlan::Dce {
                node,
                domain,
                local_id,
            } => {
                // RFC 9562 section 6.10: a random node ID has the multicast bit set, which
                // no network card's address has.
                let mut multicast = random_node;
                multicast[0] |= 0x01;
                UuidSource::Dce(DceSecurityGenerator::new(
                    MonotonicClock::new(),
                    node.unwrap_or(multicast),
                    seed[6],
                    domain,
                    local_id,
                ))
            }
            UuidPlan::Named { kind, namespace } => UuidSource::Named { kind, namespace },
        })
    }

    /// What the config set or start chose, for `/v1/generators`: the node ID (so a random
    /// one can be told apart from a MAC address), the namespace, the domain and local ID.
    pub fn settings(&self) -> Vec<(&'static str, Value)> {
        let hex = |node: [u8; 6]| -> Value {
            node.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into()
        };
        match self {
            UuidSource::Gregorian { generator, .. } => vec![("node", hex(generator.node_id()))],
            UuidSource::Dce(g) => vec![
                ("node", hex(g.node_id())),
                ("domain", g.domain().name().into()),
                ("local_id", g.local_id().into()),
            ],
            UuidSource::Named { namespace, .. } => {
                vec![("namespace", namespace.to_string().into())]
            }
        }
    }

    /// True for the kinds whose UUID is that of a name from the request (uuid3, uuid5).
    pub fn takes_input(&self) -> bool {
        matches!(self, UuidSource::Named { .. })
    }

    /// Refuses a request for `count` UUIDs of one name (anything but 1) from generator
    /// `name`, or any name sent to a generator that takes none. A `Stream` checks its whole
    /// count here before its first batch, so the error names the count the client sent.
    pub fn one_name(&self, name: &str, count: u64) -> Result<(), Error> {
        let UuidSource::Named { kind, .. } = self else {
            return Err(takes_no_input(name, self.kind()));
        };
        if count != 1 {
            return Err(Error::unsupported(format!(
                "generator {name:?} ({kind}) gives the one UUID of a name: the same name always \
                 gives the same UUID, so count must be 1 (or absent), got {count}"
            )));
        }
        Ok(())
    }

    /// The UUID of `input` under the namespace of generator `name` (a uuid3 or uuid5 one);
    /// `count` must be 1, as the same name always gives the same UUID.
    pub fn named(&self, name: &str, count: u64, input: &str) -> Result<Ids, Error> {
        self.one_name(name, count)?;
        let UuidSource::Named { kind, namespace } = self else {
            return Err(takes_no_input(name, self.kind()));
        };
        let uuid = match kind {
            Kind::Uuid3 => uuid_kind::v3(namespace, input.as_bytes()),
            _ => uuid_kind::v5(namespace, input.as_bytes()),
        };
        Ok(Ids::Text(vec![uuid.to_string()]))
    }
}

/// The refusal of a request without `input` to generator `name` (when known) of `kind`
/// (uuid3, uuid5).
pub fn needs_input(name: Option<&str>, kind: Kind) -> Error {
    let generator = match name {
        Some(name) => format!("generator {name:?} ({kind})"),
        None => format!("a {kind} generator"),
    };
    Error::unsupported(format!(
        "{generator} makes the UUID of a name: send the name as input (HTTP: ?input=NAME; \
         gRPC: the input field; the CLI: --input NAME); the same name always gives the same UUID"
    ))
}

impl IdSource for UuidSource {
    fn kind(&self) -> Kind {
        match self {
            UuidSource::Gregorian { kind, .. } | UuidSource::Named { kind, .. } => *kind,
            UuidSource::Dce(_) => Kind::Uuid2,
        }
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        let uuids: Vec<Uuid> = match self {
            UuidSource::Gregorian { kind, generator } => (0..count)
                .map(|_| match kind {
                    Kind::Uuid6 => generator.next_v6(),
                    _ => generator.next_v1(),
                })
                .collect::<Result<_, _>>()?,
            UuidSource::Dce(generator) => {
                if count > PER_WINDOW {
                    return Err(Error::unsupported(format!(
                        "a uuid2 generator gives at most {PER_WINDOW} UUIDs per 7 min 9.5 s \
                         window (DCE 1.1's layout), so no batch of {count}; ask for \
                         {PER_WINDOW} or fewer"
                    )));
                }
                // All or none, so a batch the window cannot hold takes nothing from it.
                generator.next_n(count)?
            }
            UuidSource::Named { kind, .. } => return Err(needs_input(None, *kind)),
        };
        Ok(Ids::Text(uuids.iter().map(Uuid::to_string).collect()))
    }

    fn numeric(&self) -> bool {
        false
    }

    async fn issue(&self, name: &str, count: u64, input: Option<&str>) -> Result<Ids, Error> {
        match input {
            Some(input) => self.named(name, count, input),
            None if self.takes_input() => Err(needs_input(Some(name), self.kind())),
            None => self.next(count).await,
        }
    }

    fn check_stream(&self, name: &str, total: u64, input: Option<&str>) -> Result<(), Error> {
        match input {
            Some(_) => self.one_name(name, total),
            None => Ok(()),
        }
    }

    fn decode(
        &self,
        _name: &str,
        text: &str,
        _format: Option<IdFormat>,
        _obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        super::uuid_text(self.kind(), text)
    }

    fn describe(&self, out: &mut Value) {
        for (key, value) in self.settings() {
            out[key] = value;
        }
    }
}
