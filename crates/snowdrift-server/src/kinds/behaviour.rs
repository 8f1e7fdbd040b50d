//! What a kind does, as two traits: [`KindPlan`] (its keys, how a `[[generator]]` of it is
//! checked and started) and [`IdSource`] (how it issues, decodes, describes itself and
//! reports readiness). The registry's `Source` and `SourcePlan` delegate each method to the
//! kind's own types, so state and transports ask and never match on a kind.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::layout::Layout;
use snowdrift_core::obfuscate::Obfuscator;
use snowdrift_store::segment::SegmentService;

use super::Ids;
use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::Error;

/// Why a `[[generator]]` cannot be planned: a key's value, or the generator as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The key at fault and why (`generator[0].window ("t"): ...`).
    Key(&'static str, String),
    /// The generator as a whole (`generator[0] ("t"): ...`).
    Whole(String),
}

/// What a started generator may use: the segment buffers and the runtime the worker
/// leases' keepers run on.
#[derive(Debug, Clone)]
pub struct StartContext {
    /// The node's segment service (tags and buffers).
    pub segments: Arc<SegmentService>,
    /// The keepers' runtime: lease renewals must not wait behind request handling.
    pub keepers: tokio::runtime::Handle,
}

/// A kind's configuration side. One type per kind folder; [`KINDS`](Self::KINDS) says which
/// `kind = ...` values it plans (the UUID folder plans five).
pub trait KindPlan: Sized {
    /// The source it starts.
    type Source: IdSource;

    /// The kinds this plan serves.
    const KINDS: &'static [Kind];

    /// The `[[generator]]` keys that apply to `kind` (one of [`KINDS`](Self::KINDS)),
    /// beside `name` and `kind`; any other key set is refused before [`plan`](Self::plan)
    /// runs.
    fn keys(kind: Kind) -> &'static [&'static str];

    /// Checks `g` (whose kind is one of [`KINDS`](Self::KINDS) and whose keys are among
    /// its [`keys`](Self::keys)) the way start would use it, connecting to nothing.
    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError>;

    /// The kind of IDs.
    fn kind(&self) -> Kind;

    /// Connects what the plan names and starts the generator `name`.
    fn start(
        &self,
        name: &str,
        cx: &StartContext,
    ) -> impl Future<Output = Result<Self::Source, snowdrift_store::Error>> + Send;

    /// The bit layout its IDs are composed under, when it has one: obfuscation then keeps
    /// IDs within the layout's width.
    fn layout(&self) -> Option<&Layout> {
        None
    }

    /// The worker-ID lease it issues under, when it has one: no two generators may share
    /// a lease namespace.
    fn lease(&self) -> Option<&snowdrift_store::worker::LeaseConfig> {
        None
    }

    /// What a person should know before running it, though nothing is wrong enough to
    /// refuse (a Nano ID size whose collision risk at the expected rate comes within a
    /// year): `--check-config` prints each, start logs each.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Reaches what start would connect to, for `--check-config=connect`; `seen` names
    /// what other generators reached already (a registry they share is reached once).
    fn reach(
        &self,
        _name: &str,
        _seen: &mut Vec<String>,
    ) -> impl Future<Output = Vec<super::Reached>> + Send {
        async { Vec::new() }
    }
}

/// What `INCRBY name n` can take from a kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consecutive {
    /// The last of `n` consecutive IDs, issued and counted.
    Last(u64),
    /// Its batches are not one run, and why (ends "... is of kind K: WHY"); nothing was
    /// issued.
    Never(String),
}

/// Something that hands out IDs: every kind implements it. Only [`kind`](Self::kind),
/// [`next`](Self::next) and [`numeric`](Self::numeric) are required; the rest default to
/// what a kind without that behaviour does.
pub trait IdSource: Send + Sync {
    /// The kind of IDs.
    fn kind(&self) -> Kind;

    /// `count` IDs (1 to the server's limit), all new.
    fn next(&self, count: u64) -> impl Future<Output = Result<Ids, Error>> + Send;

    /// True when its IDs are 64-bit numbers, the only ones formats apply to.
    fn numeric(&self) -> bool;

    /// `count` IDs for a request to generator `name` that brings `input` (the name a
    /// uuid3 or uuid5 generator makes the UUID of); kinds that take none refuse one.
    fn issue(
        &self,
        name: &str,
        count: u64,
        input: Option<&str>,
    ) -> impl Future<Output = Result<Ids, Error>> + Send {
        async move {
            match input {
                Some(_) => Err(takes_no_input(name, self.kind())),
                None => self.next(count).await,
            }
        }
    }

    /// Refuses a stream of `total` IDs with `input` before its first batch, when the kind
    /// can tell from the whole count (one name has one UUID).
    fn check_stream(&self, _name: &str, _total: u64, _input: Option<&str>) -> Result<(), Error> {
        Ok(())
    }

    /// The layout its IDs are composed under, when it has one.
    fn layout(&self) -> Option<&Layout> {
        None
    }

    /// The layout `format=friendly` shows the fields of, or why generator `name` has none.
    fn friendly_layout(&self, _name: &str) -> Result<&Layout, Error> {
        Err(Error::unsupported(format!(
            "format=friendly shows the fields of a snowflake layout; {} IDs have none",
            self.kind().as_str()
        )))
    }

    /// True when its 64-bit IDs may pass `i64::MAX`, so replies that are signed integers
    /// (RESP) carry them as text, every one alike.
    fn wide(&self) -> bool {
        false
    }

    /// What `text`, an ID of generator `name`, holds (see `crate::decode::id`): by
    /// default the number, read in `format` (`obfuscator` reverses an obfuscated format),
    /// for a numeric kind; nothing for a text kind.
    fn decode(
        &self,
        name: &str,
        text: &str,
        format: Option<IdFormat>,
        obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        if self.numeric() {
            super::codec::decode_number(self, name, text, format, obfuscator)
        } else {
            Err(Error::invalid(format!(
                "IDs of kind {} carry no fields to decode",
                self.kind().as_str()
            )))
        }
    }

    /// Adds what `/v1/generators` shows of it beside its name and kind.
    fn describe(&self, _out: &mut Value) {}

    /// The most bytes one of its IDs takes as text, when that can be far more than a UUID's
    /// 36 (a long Nano ID, a TypeID with a long prefix): gRPC `Stream` sizes its messages
    /// by it.
    fn max_text_bytes(&self) -> Option<usize> {
        None
    }

    /// Whether it can issue now, or why not: what `/readyz` reports.
    fn readiness(&self) -> impl Future<Output = Result<(), String>> + Send {
        async { Ok(()) }
    }

    /// Sets its gauges of generator `name`, read at scrape time.
    fn gauges(&self, _name: &str) {}

    /// Stops it for good: final marks written, leases released, leadership resigned.
    /// `keepers` is the runtime its lease keeper runs on.
    fn shutdown(
        &self,
        _name: &str,
        _keepers: &tokio::runtime::Handle,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// `n` consecutive IDs (`n` of 2 to the limit) for `INCRBY`, answered with the last;
    /// or why its batches are not one run, before anything is issued.
    fn consecutive(
        &self,
        _name: &str,
        _n: u64,
    ) -> impl Future<Output = Result<Consecutive, Error>> + Send {
        async { Ok(Consecutive::Never("its IDs are text, not a counter".into())) }
    }

    /// `count` IDs for another node of the cluster that forwarded its client's request, with
    /// the term they were issued in; `None` for kinds no node forwards to.
    fn next_for_peer(
        &self,
        _count: u64,
    ) -> impl Future<Output = Option<Result<(Ids, i64), Error>>> + Send {
        async { None }
    }
}

/// The refusal of an `input` sent to generator `name` of `kind`, which makes IDs from none.
pub fn takes_no_input(name: &str, kind: Kind) -> Error {
    Error::unsupported(format!(
        "generator {name:?} is of kind {kind}, which takes no input; input is the name a \
         uuid3 or uuid5 generator makes the UUID of"
    ))
}

/// `INCRBY`'s answer from `ids`, `n` IDs generator `name` (of `kind`) just issued as one
/// batch: counted, and the last of them when they are one run; otherwise they are skipped.
pub fn one_run_last(name: &str, kind: Kind, ids: Ids, n: u64) -> Result<Consecutive, Error> {
    crate::metrics::issued(name, kind, ids.len());
    ids.last_of_one_run(n)
        .map(Consecutive::Last)
        .ok_or_else(|| {
            Error::unavailable(format!(
                "{name:?} returned {n} IDs that are not one consecutive run; they are skipped: \
                 try again"
            ))
        })
}
