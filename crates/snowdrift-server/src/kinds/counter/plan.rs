//! A `counter` generator's keys and plan: its Redis and how its counter counts.

use snowdrift_core::counter::CounterTemplate;
use snowdrift_store::counter::{RedisCounter, RedisCounterBuilder};

use crate::config::{Config, GeneratorConfig, Kind};
use crate::kinds::{KindPlan, PlanError, Reached, StartContext};

use super::CounterSource;

/// A `counter` generator: its Redis and how its counter counts.
#[derive(Debug, Clone)]
pub struct CounterPlan {
    /// The Redis URL.
    pub url: String,
    /// The template its IDs are rendered through, if any.
    pub template: Option<CounterTemplate>,
    /// Values reserved per round trip.
    pub batch: Option<u64>,
    /// Most IDs per call: `limits.max_count`.
    pub max_per_call: u64,
}

impl CounterPlan {
    /// The counter builder of generator `name`, before it is checked or connected.
    fn builder(&self, name: &str) -> RedisCounterBuilder {
        let mut counter = RedisCounter::builder(name);
        if let Some(template) = &self.template {
            counter = counter.template(template.clone());
        }
        if let Some(batch) = self.batch {
            counter = counter.batch(batch);
        }
        counter.max_per_call(self.max_per_call)
    }

    /// The counter of generator `name`, connected as start connects it.
    pub async fn connect(&self, name: &str) -> snowdrift_store::Result<RedisCounter> {
        self.builder(name).connect(&self.url).await
    }
}

impl KindPlan for CounterPlan {
    type Source = CounterSource;
    const KINDS: &'static [Kind] = &[Kind::Counter];
    fn keys(_kind: Kind) -> &'static [&'static str] {
        &[
            "url",
            "template",
            "batch",
            "obfuscate_key",
            "obfuscate_bits",
        ]
    }

    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let Some(url) = g.url.clone() else {
            return Err(PlanError::Whole(
                "kind counter needs url = \"redis://...\"".into(),
            ));
        };
        snowdrift_store::check_redis_url(&url).map_err(|e| {
            PlanError::Key(
                "url",
                format!(
                    "{e}; a counter counts in Redis: url = \"redis://HOST:6379[/DB]\""
                ),
            )
        })?;
        if g.template.is_some() && g.obfuscate_key.is_some() {
            return Err(PlanError::Whole(
                "obfuscate_key applies to 64-bit IDs, and a counter with a template issues \
                 text; drop one of the two"
                    .into(),
            ));
        }
        let template = g
            .template
            .as_deref()
            .map(|text| {
                text.parse::<CounterTemplate>()
                    .map_err(|e| PlanError::Whole(format!("template {text:?}: {e}")))
            })
            .transpose()?;
        let plan = CounterPlan {
            url,
            template,
            batch: g.batch,
            max_per_call: config.limits.max_count,
        };
        plan.builder(&g.name)
            .check()
            .map_err(|e| PlanError::Whole(e.to_string()))?;
        Ok(plan)
    }

    fn kind(&self) -> Kind {
        Kind::Counter
    }

    async fn start(
        &self,
        name: &str,
        _cx: &StartContext,
    ) -> Result<CounterSource, snowdrift_store::Error> {
        Ok(CounterSource::new(self.connect(name).await?))
    }

    async fn reach(&self, name: &str, _seen: &mut Vec<String>) -> Vec<Reached> {
        let answer = Reached::bounded(self.connect(name)).await;
        vec![Reached::new(
            format!("Redis of counter {name:?}"),
            &self.url,
            answer,
        )]
    }
}
