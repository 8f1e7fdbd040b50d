//! `snowdrift tags`: create, list and update segment tags.

use anyhow::{Context, Result, bail};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_store::segment::{NewTag, Tag, TagUpdate, parse_utc_offset, show_utc_offset};

use crate::store_args::{StoreArgs, runtime};

/// Create, list and update segment tags (Leaf's biz_tag rows).
///
/// By default the command asks a running `snowdrift serve` (--server), which also checks that
/// a new tag does not take a generator's name. With --store it works on the store directly,
/// with no server running.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift tags create order --step 1000 --description orders\n  snowdrift tags create invoice --template 'INV{date:%Y%m%d}{seq:06}' --utc-offset +08:00\n  snowdrift tags --server http://10.0.0.5:8080 list\n  snowdrift tags --store sqlite://snowdrift.db create order --step 1000\n  snowdrift tags --store postgres://root@127.0.0.1/test list\n  snowdrift tags --store redis://127.0.0.1:6379 update order --step 5000"
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    store: StoreArgs,
    /// The running snowdrift server to ask (when --store is not given).
    #[arg(
        long,
        global = true,
        value_name = "URL",
        default_value = "http://127.0.0.1:8080",
        env = "SNOWDRIFT_SERVER_URL"
    )]
    server: String,
    /// Bearer token sent to the server (`Authorization: Bearer TOKEN`).
    #[arg(long, global = true, value_name = "TOKEN", env = "SNOWDRIFT_TOKEN")]
    token: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Create a tag; its first ID is 1.
    Create {
        /// The tag: 1 to 128 of A-Z a-z 0-9 _ - . :
        tag: String,
        /// IDs per segment claimed from the store (1 to 2147483647).
        #[arg(long, default_value_t = snowdrift_store::segment::DEFAULT_STEP)]
        step: i64,
        /// Free text, at most 256 characters.
        #[arg(long)]
        description: Option<String>,
        /// Render its numbers through a template, counting from 1 each period it names:
        /// 'ORD{date:%Y%m%d}{seq:06}' restarts daily (SQL stores only).
        #[arg(long, value_name = "TEMPLATE")]
        template: Option<String>,
        /// The UTC offset of the template's dates and periods, +HH:MM or -HH:MM (UTC when
        /// not given).
        #[arg(
            long,
            value_name = "OFFSET",
            requires = "template",
            allow_hyphen_values = true
        )]
        utc_offset: Option<String>,
    },
    /// List every tag.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Change a tag's step and/or description.
    Update {
        /// The tag.
        tag: String,
        /// New IDs per segment.
        #[arg(long)]
        step: Option<i64>,
        /// New description.
        #[arg(long)]
        description: Option<String>,
    },
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    runtime()?.block_on(async {
        let admin = match args.store.url {
            Some(_) => Admin::Store(args.store.connect().await?),
            None => Admin::Server(TagClient::new(&args.server, args.token.as_deref())?),
        };
        match args.action {
            Action::Create {
                tag,
                step,
                description,
                template,
                utc_offset,
            } => {
                let template = match template {
                    Some(text) => Some(template_of(&text, utc_offset.as_deref())?),
                    None => None,
                };
                let new = NewTag {
                    tag,
                    step,
                    description,
                    template,
                };
                let t = match &admin {
                    Admin::Store(store) => store.create_tag(&new).await?,
                    Admin::Server(client) => client.create(&new).await?,
                };
                outln!("created {}", summary(&t))?;
            }
            Action::List { json } => {
                let tags = match &admin {
                    Admin::Store(store) => store.list_tags().await?,
                    Admin::Server(client) => client.list().await?,
                };
                if json {
                    let all: Vec<_> = tags.iter().map(to_json).collect();
                    outln!("{}", serde_json::to_string_pretty(&all)?)?;
                } else {
                    outln!("{:<32} {:>20} {:>10}  DESCRIPTION", "TAG", "MAX_ID", "STEP")?;
                    for t in &tags {
                        outln!(
                            "{:<32} {:>20} {:>10}  {}{}",
                            t.tag,
                            t.max_id,
                            t.step,
                            t.description.as_deref().unwrap_or(""),
                            templated(t)
                        )?;
                    }
                }
            }
            Action::Update {
                tag,
                step,
                description,
            } => {
                let update = TagUpdate { step, description };
                let t = match &admin {
                    Admin::Store(store) => store.update_tag(&tag, &update).await?,
                    Admin::Server(client) => client.update(&tag, &update).await?,
                };
                outln!("updated {}", summary(&t))?;
            }
        }
        Ok(())
    })
}

/// Where tag changes go.
enum Admin {
    Store(snowdrift_store::segment::SegmentStore),
    Server(TagClient),
}

fn summary(t: &Tag) -> String {
    format!(
        "{} (max_id {}, step {}{}){}",
        t.tag,
        t.max_id,
        t.step,
        t.description
            .as_deref()
            .map(|d| format!(", {d:?}"))
            .unwrap_or_default(),
        templated(t)
    )
}

/// `TEMPLATE` read with `--utc-offset`.
fn template_of(text: &str, utc_offset: Option<&str>) -> Result<CounterTemplate> {
    let template = CounterTemplate::parse(text).context("--template")?;
    let offset = utc_offset
        .map(parse_utc_offset)
        .transpose()
        .context("--utc-offset")?
        .unwrap_or(0);
    template.with_utc_offset(offset).context("--utc-offset")
}

/// What a tag with a template shows after its line (nothing for Leaf's tags).
fn templated(t: &Tag) -> String {
    let Some(template) = &t.template else {
        return String::new();
    };
    let period = match t.period {
        0 => String::new(),
        p => format!(", period {p}"),
    };
    format!(
        " [template {template}, UTC{}{period}]",
        show_utc_offset(template.utc_offset_seconds())
    )
}

/// The server's `/v1/tags` API.
struct TagClient {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl TagClient {
    fn new(server: &str, token: Option<&str>) -> Result<Self> {
        let base = server.trim_end_matches('/').to_string();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            bail!("--server {server:?} must start with http:// or https://");
        }
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .context("building the HTTP client")?;
        Ok(Self {
            http,
            base,
            token: token.map(str::to_string),
        })
    }

    async fn create(&self, new: &NewTag) -> Result<Tag> {
        let mut body = serde_json::json!({
            "tag": new.tag, "step": new.step, "description": new.description,
        });
        if let Some(template) = &new.template {
            body["template"] = template.as_str().into();
            body["utc_offset"] = show_utc_offset(template.utc_offset_seconds()).into();
        }
        let v = self.send(self.http.post(self.url("")).json(&body)).await?;
        from_json(&v)
    }

    async fn list(&self) -> Result<Vec<Tag>> {
        let v = self.send(self.http.get(self.url(""))).await?;
        let Some(tags) = v["tags"].as_array() else {
            bail!("the server's tag list has no \"tags\" array: {v}");
        };
        tags.iter().map(from_json).collect()
    }

    async fn update(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        let mut body = serde_json::Map::new();
        if let Some(step) = update.step {
            body.insert("step".into(), step.into());
        }
        if let Some(d) = &update.description {
            body.insert("description".into(), d.clone().into());
        }
        let url = self.url(&format!("/{tag}"));
        from_json(&self.send(self.http.patch(url).json(&body)).await?)
    }

    fn url(&self, rest: &str) -> String {
        format!("{}/v1/tags{rest}", self.base)
    }

    /// Sends `req` and returns its JSON body, or the server's error message.
    async fn send(&self, mut req: reqwest::RequestBuilder) -> Result<serde_json::Value> {
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let response = req.send().await.with_context(|| {
            format!(
                "cannot reach the snowdrift server at {}; start it with `snowdrift serve`, \
                 point --server at it, or use --store URL to work on the store directly",
                self.base
            )
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .context("reading the server's answer")?;
        let v: serde_json::Value = serde_json::from_str(&text).with_context(|| {
            format!("the server answered {status} with something other than JSON: {text:.200}")
        })?;
        if !status.is_success() {
            let message = v["error"]["message"].as_str().unwrap_or(&text);
            bail!("the server refused ({status}): {message}");
        }
        Ok(v)
    }
}

fn from_json(v: &serde_json::Value) -> Result<Tag> {
    let field = |name: &str| {
        v.get(name)
            .with_context(|| format!("the server's tag has no {name:?}: {v}"))
    };
    let tag = field("tag")?
        .as_str()
        .context("tag is not a string")?
        .to_string();
    let max_id = match field("max_id")? {
        serde_json::Value::String(s) => s.parse().context("max_id is not a number")?,
        other => other.as_i64().context("max_id is not a number")?,
    };
    let step = field("step")?.as_i64().context("step is not a number")?;
    let description = v["description"].as_str().map(str::to_string);
    let template = match v["template"].as_str() {
        Some(text) => Some(template_of(text, v["utc_offset"].as_str())?),
        None => None,
    };
    let period = match v["period"].as_str() {
        Some(p) => p.parse().context("period is not a number")?,
        None => 0,
    };
    Ok(Tag {
        tag,
        max_id,
        step,
        description,
        template,
        period,
    })
}

/// A tag as `list --json` prints it: the server's shape, so both read alike.
fn to_json(t: &Tag) -> serde_json::Value {
    let mut v = serde_json::json!({
        "tag": t.tag,
        "max_id": t.max_id.to_string(),
        "step": t.step,
        "description": t.description,
    });
    if let Some(template) = &t.template {
        v["template"] = template.as_str().into();
        v["utc_offset"] = show_utc_offset(template.utc_offset_seconds()).into();
        if t.period != 0 {
            v["period"] = t.period.to_string().into();
        }
    }
    v
}
