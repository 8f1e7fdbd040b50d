//! The macro behind the registry: from one line per kind it writes [`Source`](super::Source)
//! and [`SourcePlan`](super::SourcePlan) and their delegating methods, so the list of kinds
//! is written once.

/// `kinds! { folder: Variant(SourceType, PlanType), ... }`: the kinds' folders (modules),
/// the two enums and their delegation.
macro_rules! kinds {
    ($( $(#[$doc:meta])* $module:ident: $variant:ident($source:ident, $plan:ident) ),* $(,)?) => {
        $( pub mod $module; )*

        /// One configured generator: a source of any kind.
        #[derive(Debug)]
        pub enum Source {
            $( $(#[$doc])* $variant($module::$source), )*
        }

        /// Where a generator's IDs come from, with everything its kind needs, checked.
        // A plan is made once per configuration, never per request: the snowflake
        // variant's size (layout, lease, options inline) costs nothing worth a box.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone)]
        pub enum SourcePlan {
            $( $(#[$doc])* $variant($module::$plan), )*
        }

        impl SourcePlan {
            /// The plan of `g` by its kind's folder; its keys are checked first
            /// ([`check_keys`](crate::kinds::check_keys)).
            pub fn plan(
                config: &crate::config::Config,
                g: &crate::config::GeneratorConfig,
            ) -> Result<Self, PlanError> {
                $(
                    if <$module::$plan as KindPlan>::KINDS.contains(&g.kind) {
                        return <$module::$plan as KindPlan>::plan(config, g).map(SourcePlan::$variant);
                    }
                )*
                Err(PlanError::Whole(format!(
                    "kind {} is not served by this build of snowdrift",
                    g.kind.as_str()
                )))
            }

            /// The `[[generator]]` keys of `kind`, beside `name` and `kind`.
            pub fn keys(kind: crate::config::Kind) -> &'static [&'static str] {
                $(
                    if <$module::$plan as KindPlan>::KINDS.contains(&kind) {
                        return <$module::$plan as KindPlan>::keys(kind);
                    }
                )*
                &[]
            }

            /// The kind of IDs.
            pub fn kind(&self) -> crate::config::Kind {
                match self {
                    $( SourcePlan::$variant(p) => KindPlan::kind(p), )*
                }
            }

            /// The layout IDs are composed under, when the kind has one.
            pub fn layout(&self) -> Option<&snowdrift_core::layout::Layout> {
                match self {
                    $( SourcePlan::$variant(p) => KindPlan::layout(p), )*
                }
            }

            /// The worker-ID lease it issues under, when it has one.
            pub fn lease(&self) -> Option<&snowdrift_store::worker::LeaseConfig> {
                match self {
                    $( SourcePlan::$variant(p) => KindPlan::lease(p), )*
                }
            }

            /// What a person should know before running it (see [`KindPlan::warnings`]).
            pub fn warnings(&self) -> Vec<String> {
                match self {
                    $( SourcePlan::$variant(p) => KindPlan::warnings(p), )*
                }
            }

            /// Reaches what start would connect to (see [`KindPlan::reach`]).
            pub async fn reach(&self, name: &str, seen: &mut Vec<String>) -> Vec<$crate::kinds::Reached> {
                match self {
                    $( SourcePlan::$variant(p) => KindPlan::reach(p, name, seen).await, )*
                }
            }

            /// Connects what the plan names and starts generator `name`.
            pub async fn start(
                &self,
                name: &str,
                cx: &StartContext,
            ) -> Result<Source, snowdrift_store::Error> {
                Ok(match self {
                    $( SourcePlan::$variant(p) => Source::$variant(KindPlan::start(p, name, cx).await?), )*
                })
            }
        }

        impl IdSource for Source {
            #[inline]
            fn kind(&self) -> crate::config::Kind {
                match self {
                    $( Source::$variant(s) => IdSource::kind(s), )*
                }
            }

            #[inline]
            async fn next(&self, count: u64) -> Result<Ids, crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::next(s, count).await, )*
                }
            }

            #[inline]
            fn numeric(&self) -> bool {
                match self {
                    $( Source::$variant(s) => IdSource::numeric(s), )*
                }
            }

            async fn issue(
                &self,
                name: &str,
                count: u64,
                input: Option<&str>,
            ) -> Result<Ids, crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::issue(s, name, count, input).await, )*
                }
            }

            fn check_stream(
                &self,
                name: &str,
                total: u64,
                input: Option<&str>,
            ) -> Result<(), crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::check_stream(s, name, total, input), )*
                }
            }

            fn layout(&self) -> Option<&snowdrift_core::layout::Layout> {
                match self {
                    $( Source::$variant(s) => IdSource::layout(s), )*
                }
            }

            fn friendly_layout(
                &self,
                name: &str,
            ) -> Result<&snowdrift_core::layout::Layout, crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::friendly_layout(s, name), )*
                }
            }

            fn wide(&self) -> bool {
                match self {
                    $( Source::$variant(s) => IdSource::wide(s), )*
                }
            }

            fn decode(
                &self,
                name: &str,
                text: &str,
                format: Option<snowdrift_core::codec::IdFormat>,
                obfuscator: Option<&snowdrift_core::obfuscate::Obfuscator>,
            ) -> Result<serde_json::Value, crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::decode(s, name, text, format, obfuscator), )*
                }
            }

            fn describe(&self, out: &mut serde_json::Value) {
                match self {
                    $( Source::$variant(s) => IdSource::describe(s, out), )*
                }
            }

            fn max_text_bytes(&self) -> Option<usize> {
                match self {
                    $( Source::$variant(s) => IdSource::max_text_bytes(s), )*
                }
            }

            async fn readiness(&self) -> Result<(), String> {
                match self {
                    $( Source::$variant(s) => IdSource::readiness(s).await, )*
                }
            }

            fn gauges(&self, name: &str) {
                match self {
                    $( Source::$variant(s) => IdSource::gauges(s, name), )*
                }
            }

            async fn shutdown(&self, name: &str, keepers: &tokio::runtime::Handle) {
                match self {
                    $( Source::$variant(s) => IdSource::shutdown(s, name, keepers).await, )*
                }
            }

            async fn consecutive(
                &self,
                name: &str,
                n: u64,
            ) -> Result<Consecutive, crate::error::Error> {
                match self {
                    $( Source::$variant(s) => IdSource::consecutive(s, name, n).await, )*
                }
            }

            async fn next_for_peer(
                &self,
                count: u64,
            ) -> Option<Result<(Ids, i64), crate::error::Error>> {
                match self {
                    $( Source::$variant(s) => IdSource::next_for_peer(s, count).await, )*
                }
            }
        }
    };
}
