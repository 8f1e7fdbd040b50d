//! `snowdrift tags`: create, list and update segment tags.

use anyhow::{Result, bail};
use snowdrift_store::segment::{NewTag, Tag, TagUpdate};

use crate::store_args::{StoreArgs, runtime};

/// Create, list and update segment tags (Leaf's biz_tag rows).
///
/// With --store the command works on the store directly. Without it, it would talk to a
/// running `snowdrift serve` at --server; that server is not built yet, so --store is
/// required for now.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift tags --store sqlite://snowdrift.db create order --step 1000 --description orders\n  snowdrift tags --store postgres://root@127.0.0.1/test list\n  snowdrift tags --store redis://127.0.0.1:6379 update order --step 5000"
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    #[command(flatten)]
    store: StoreArgs,
    /// A running snowdrift server to send the change to.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        default_value = "http://127.0.0.1:8080"
    )]
    server: String,
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
    if args.store.url.is_none() {
        bail!(
            "talking to a server ({}) is not implemented yet; pass --store URL to work on the store directly",
            args.server
        );
    }
    runtime()?.block_on(async {
        let store = args.store.connect().await?;
        match args.action {
            Action::Create {
                tag,
                step,
                description,
            } => {
                let t = store
                    .create_tag(&NewTag {
                        tag,
                        step,
                        description,
                    })
                    .await?;
                println!("created {}", summary(&t));
            }
            Action::List { json } => {
                let tags = store.list_tags().await?;
                if json {
                    let all: Vec<_> = tags.iter().map(to_json).collect();
                    println!("{}", serde_json::to_string_pretty(&all)?);
                } else {
                    println!("{:<32} {:>20} {:>10}  DESCRIPTION", "TAG", "MAX_ID", "STEP");
                    for t in &tags {
                        println!(
                            "{:<32} {:>20} {:>10}  {}",
                            t.tag,
                            t.max_id,
                            t.step,
                            t.description.as_deref().unwrap_or("")
                        );
                    }
                }
            }
            Action::Update {
                tag,
                step,
                description,
            } => {
                let t = store
                    .update_tag(&tag, &TagUpdate { step, description })
                    .await?;
                println!("updated {}", summary(&t));
            }
        }
        Ok(())
    })
}

fn summary(t: &Tag) -> String {
    format!(
        "{} (max_id {}, step {}{})",
        t.tag,
        t.max_id,
        t.step,
        t.description
            .as_deref()
            .map(|d| format!(", {d:?}"))
            .unwrap_or_default()
    )
}

fn to_json(t: &Tag) -> serde_json::Value {
    serde_json::json!({
        "tag": t.tag,
        "max_id": t.max_id.to_string(),
        "step": t.step,
        "description": t.description,
    })
}
