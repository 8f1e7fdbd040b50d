//! `snowdrift token`: make bearer tokens for the server's `[[auth.token]]` config.

use anyhow::{Context, Result};
use snowdrift_server::auth::{Auth, Role, TokenHash, generate_token};
use snowdrift_server::config::{AuthConfig, TokenConfig};

/// Make bearer tokens for `snowdrift serve`.
///
/// The server stores only a token's SHA-256 hash, so the token is printed once, here. Auth is
/// on as soon as the server's config has one [[auth.token]].
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift token create --name ci --generators orders,users\n  snowdrift token create --name ops --generators '*' --role admin\n  snowdrift token create --name batch --rate 100 --burst 200\n\nThen paste the printed [[auth.token]] lines into the server's config, reload it (kill -HUP,\nor restart it), and send\n  curl -H 'Authorization: Bearer TOKEN' http://127.0.0.1:8080/v1/ids/orders"
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Print a new random token once, and the config lines (with its hash) that let it in.
    Create(CreateArgs),
}

#[derive(Debug, clap::Args)]
struct CreateArgs {
    /// A name for the token, shown in the server's messages and logs (default: token- and
    /// the start of its hash).
    #[arg(long)]
    name: Option<String>,
    /// Generator and tag names it may use, comma-separated, or '*' for all.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    generators: Vec<String>,
    /// read: issue and decode IDs; admin: also create, read and update tags.
    #[arg(long, value_enum, default_value_t = RoleArg::Read)]
    role: RoleArg,
    /// Requests per second it may make on average (no limit when not given).
    #[arg(long)]
    rate: Option<u32>,
    /// Requests it may make at once before --rate applies (default: --rate).
    #[arg(long, requires = "rate")]
    burst: Option<u32>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    Read,
    Admin,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    match args.action {
        Action::Create(a) => create(a),
    }
}

fn create(args: CreateArgs) -> Result<()> {
    let token = generate_token().context("cannot read random bytes from the operating system")?;
    let hash = TokenHash::of(&token);
    let name = args.name.unwrap_or_else(|| {
        let hex = hash.to_string();
        format!("token-{}", &hex["sha256:".len()..][..8])
    });
    let config = TokenConfig {
        name,
        hash: hash.to_string(),
        generators: args
            .generators
            .iter()
            .map(|g| g.trim().to_string())
            .collect(),
        role: match args.role {
            RoleArg::Read => Role::Read,
            RoleArg::Admin => Role::Admin,
        },
        rate: args.rate,
        burst: args.burst,
    };
    // The server's own check, so what is printed is what it accepts.
    Auth::from_config(&AuthConfig {
        tokens: vec![config.clone()],
    })
    .map_err(|e| anyhow::anyhow!("{e}").context("these options make no valid token"))?;
    out!("{}", output(&token, &config))?;
    Ok(())
}

/// The token, then the config lines. The token is never inside the TOML, so pasting the
/// lines puts only the hash in the config.
fn output(token: &str, t: &TokenConfig) -> String {
    let quote = |s: &str| serde_json::Value::from(s).to_string();
    let generators: Vec<String> = t.generators.iter().map(|g| quote(g)).collect();
    let mut toml = format!(
        "[[auth.token]]\nname = {}\nhash = {}\ngenerators = [{}]\nrole = {}\n",
        quote(&t.name),
        quote(&t.hash),
        generators.join(", "),
        quote(t.role.name())
    );
    if let Some(rate) = t.rate {
        toml.push_str(&format!("rate = {rate}\n"));
    }
    if let Some(burst) = t.burst {
        toml.push_str(&format!("burst = {burst}\n"));
    }
    format!(
        "Token {name} (shown only now; the server keeps just its hash, so store it safely):\n\n  \
         {token}\n\nAdd these lines to the server's config file and reload it (kill -HUP <pid>: \
         tokens take\neffect without a restart):\n\n{toml}\n\
         Clients send the token as the header: Authorization: Bearer <token>\n",
        name = quote(&t.name)
    )
}
