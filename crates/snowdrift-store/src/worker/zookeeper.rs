//! Worker leases on ZooKeeper: an ephemeral znode per claimed worker ID, a persistent one for its high-water mark.
