//! Why [`OracleNode::next`](super::OracleNode::next) gave no IDs.

use std::sync::Arc;

/// Why this node's oracle gave no IDs. Only [`WindowSave`](Self::WindowSave) and
/// [`Oracle`](Self::Oracle) come from a term that goes on; after the others, ask as
/// [`OracleNode::role`](super::OracleNode::role) says.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// This node does not lead, or its term ended before the request was served: nothing
    /// was issued. Another node may lead now.
    #[error("this node's term ended")]
    NotLeading,
    /// The window the next IDs need could not be saved in etcd (etcd away or slow); the
    /// term goes on, and the request may be tried again.
    #[error("tso generator {name:?}: saving the window in etcd failed: {source}")]
    WindowSave {
        /// The oracle.
        name: String,
        /// What etcd answered.
        #[source]
        source: Arc<crate::Error>,
    },
    /// The oracle refused the allocation (its physical part ran out, or the count is more
    /// than one millisecond holds).
    #[error(transparent)]
    Oracle(#[from] snowdrift_core::Error),
    /// The node's task has stopped (shutdown).
    #[error("timestamp oracle {name:?} is shutting down on this node")]
    Stopped {
        /// The oracle.
        name: String,
    },
}
