//! Meituan Leaf's snowflake workers in ZooKeeper (`SnowflakeZookeeperHolder`): under
//! `/snowflake/{leaf.name}/forever`, a persistent sequential znode `{ip}:{port}-{seq}` per
//! Leaf server ever started, whose sequence number is that server's worker ID and whose
//! data, rewritten every 3 s while it runs, is `{"ip":…,"port":…,"timestamp":…}`: its clock
//! at the last report, in ms since 1970.

use zookeeper_client as zk;

use crate::error::{Error, Result};
use crate::zk_connection::{Session, Target};

/// Leaf's root of every snowflake deployment's znodes.
pub const ROOT: &str = "/snowflake";

/// The largest worker ID Leaf starts with (10 bits); a server given a higher sequence
/// number refuses to start, so it issued nothing.
pub const MAX_WORKER_ID: u64 = 1023;

/// How often a running Leaf server rewrites its znode's timestamp (`ScheduledUploadData`).
pub const REPORT_EVERY_MS: u64 = 3_000;

/// One Leaf snowflake server as its znode records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafWorker {
    /// The znode's path.
    pub znode: String,
    /// `ip:port` the server listened on.
    pub address: String,
    /// Its worker ID: the znode's sequence number.
    pub worker_id: u64,
    /// Its clock at its last report (the data's `timestamp`), ms since 1970.
    pub timestamp_ms: u64,
}

/// A Leaf snowflake deployment: `leaf.name` and its workers, by worker ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafSnowflake {
    /// `leaf.name`, the znode under [`ROOT`].
    pub name: String,
    /// Its workers, by worker ID.
    pub workers: Vec<LeafWorker>,
}

/// The data of a worker's znode, as Leaf's Jackson writes it (the port as text).
#[derive(Debug, serde::Deserialize)]
struct Endpoint {
    timestamp: u64,
}

/// Reads the workers of Leaf deployment `name` (`leaf.name`) from the ZooKeeper at `url`
/// (`zookeeper://HOST:PORT[,…]`); with no name, the only deployment under [`ROOT`] (several
/// are refused, naming them). Writes nothing.
pub async fn read(url: &str, name: Option<&str>) -> Result<LeafSnowflake> {
    let session = Session::new(Target::parse(url)?);
    let client = tokio::time::timeout(std::time::Duration::from_secs(5), session.client())
        .await
        .map_err(|_| {
            Error::Unavailable(
                format!(
                    "ZooKeeper at {} did not answer within 5 s",
                    crate::mask_url(url)
                )
                .into(),
            )
        })??;
    let children = |path: String| {
        let client = client.clone();
        let session = session.clone();
        async move {
            match client.list_children(&path).await {
                Ok(mut names) => {
                    names.sort();
                    Ok(names)
                }
                Err(zk::Error::NoNode) => Err(Error::InvalidInput(format!(
                    "ZooKeeper at {} has no znode {path}: it holds no Leaf snowflake workers there (Leaf keeps them under {ROOT}/{{leaf.name}}/forever); check --zookeeper and --leaf-name",
                    crate::mask_url(url)
                ))),
                Err(e) => Err(session.failed_on(&path, e).await),
            }
        }
    };
    let name = match name {
        Some(n) => n.to_string(),
        None => {
            let names = children(ROOT.to_string()).await?;
            match names.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(Error::InvalidInput(format!(
                        "ZooKeeper znode {ROOT} has no Leaf deployment under it: check --zookeeper"
                    )));
                }
                many => {
                    return Err(Error::InvalidInput(format!(
                        "ZooKeeper znode {ROOT} holds {} Leaf deployments ({}): name one with --leaf-name (Leaf's leaf.name)",
                        many.len(),
                        many.join(", ")
                    )));
                }
            }
        }
    };
    let forever = format!("{ROOT}/{name}/forever");
    let mut workers = Vec::new();
    for child in children(forever.clone()).await? {
        let znode = format!("{forever}/{child}");
        // Leaf splits at '-' and parses the second part: `ip:port-0000000003`.
        let parsed = child
            .split_once('-')
            .and_then(|(address, seq)| Some((address, seq.parse::<u64>().ok()?)));
        let Some((address, worker_id)) = parsed else {
            return Err(Error::InvalidInput(format!(
                "znode {znode} is not a Leaf worker ({{ip}}:{{port}}-{{sequence}}): Leaf itself fails to start beside it; remove it or give the right --leaf-name"
            )));
        };
        let data = match client.get_data(&znode).await {
            Ok((data, _)) => data,
            // Removed between the listing and the read: not a worker any more.
            Err(zk::Error::NoNode) => continue,
            Err(e) => return Err(session.failed_on(&znode, e).await),
        };
        let endpoint: Endpoint = serde_json::from_slice(&data).map_err(|e| {
            Error::InvalidInput(format!(
                "znode {znode} does not hold Leaf's {{\"ip\",\"port\",\"timestamp\"}} ({e}): its last report cannot be read, so the time its worker ID issued up to is unknown; fix or remove it"
            ))
        })?;
        workers.push(LeafWorker {
            znode,
            address: address.to_string(),
            worker_id,
            timestamp_ms: endpoint.timestamp,
        });
    }
    workers.sort_by_key(|w| w.worker_id);
    Ok(LeafSnowflake { name, workers })
}
