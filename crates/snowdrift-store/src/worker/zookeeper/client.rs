//! [`ZkConnector`] and [`ZkSession`] for a real ensemble, through `zookeeper-client`: one
//! client call per request, with the ACLs and credentials of the registry's URL.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client as zk;

use super::api::{Mode, MultiWriteError, Stat, WriteOp, ZkConnector, ZkError, ZkFuture, ZkSession};
use crate::error::Error;
use crate::zk_connection::Target;

/// The ensemble a `zookeeper://` URL names.
#[derive(Debug, Clone)]
pub(crate) struct ClientConnector {
    target: Target,
}

impl ClientConnector {
    pub(crate) fn new(target: Target) -> Self {
        Self { target }
    }
}

impl ZkConnector for ClientConnector {
    fn connect(
        &self,
        timeout: Duration,
        connection_timeout: Option<Duration>,
    ) -> ZkFuture<'_, Arc<dyn ZkSession>> {
        Box::pin(async move {
            let mut connector = self.target.connector().with_session_timeout(timeout);
            if let Some(t) = connection_timeout {
                connector = connector.with_connection_timeout(t);
            }
            let client = connector.connect(self.target.cluster()).await?;
            Ok(Arc::new(ClientSession {
                client,
                target: self.target.clone(),
            }) as Arc<dyn ZkSession>)
        })
    }

    fn refused(&self, path: &str, e: ZkError) -> Error {
        self.target.refused(path, e)
    }

    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A `zookeeper-client` session.
struct ClientSession {
    client: zk::Client,
    target: Target,
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("session", &self.client.session_id())
            .finish_non_exhaustive()
    }
}

impl ClientSession {
    fn options(&self, mode: Mode) -> zk::CreateOptions<'static> {
        match mode {
            Mode::Persistent => self.target.persistent(),
            Mode::Ephemeral => self.target.ephemeral(),
        }
    }
}

impl ZkSession for ClientSession {
    fn session_id(&self) -> i64 {
        self.client.session_id().0
    }

    fn session_timeout(&self) -> Duration {
        self.client.session_timeout()
    }

    fn is_terminated(&self) -> bool {
        self.client.state().is_terminated()
    }

    fn create<'a>(&'a self, path: &'a str, data: &'a [u8], mode: Mode) -> ZkFuture<'a, ()> {
        Box::pin(async move {
            self.client.create(path, data, &self.options(mode)).await?;
            Ok(())
        })
    }

    fn get_data<'a>(&'a self, path: &'a str) -> ZkFuture<'a, (Vec<u8>, Stat)> {
        Box::pin(self.client.get_data(path))
    }

    fn check_stat<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Option<Stat>> {
        Box::pin(self.client.check_stat(path))
    }

    fn list_children<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Vec<String>> {
        Box::pin(self.client.list_children(path))
    }

    fn set_data<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        version: Option<i32>,
    ) -> ZkFuture<'a, Stat> {
        Box::pin(self.client.set_data(path, data, version))
    }

    fn delete<'a>(&'a self, path: &'a str, version: Option<i32>) -> ZkFuture<'a, ()> {
        Box::pin(self.client.delete(path, version))
    }

    fn sync<'a>(&'a self, path: &'a str) -> ZkFuture<'a, ()> {
        Box::pin(self.client.sync(path))
    }

    fn multi(&self, ops: Vec<WriteOp>) -> ZkFuture<'_, (), MultiWriteError> {
        Box::pin(async move {
            let mut write = self.client.new_multi_writer();
            for op in &ops {
                match op {
                    WriteOp::Check { path, version } => write.add_check_version(path, *version),
                    WriteOp::Create { path, data, mode } => {
                        write.add_create(path, data, &self.options(*mode))
                    }
                    WriteOp::SetData {
                        path,
                        data,
                        version,
                    } => write.add_set_data(path, data, *version),
                    WriteOp::Delete { path, version } => write.add_delete(path, *version),
                }?;
            }
            write.commit().await?;
            Ok(())
        })
    }

    fn secure<'a>(&'a self, path: &'a str, tree: bool) -> ZkFuture<'a, (), Error> {
        Box::pin(async move {
            if tree {
                self.target.secure_tree(&self.client, path).await
            } else {
                self.target.secure(&self.client, path).await
            }
        })
    }
}
