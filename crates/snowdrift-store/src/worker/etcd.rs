//! Worker leases on etcd: a key per worker ID under a lease, claimed by a transaction on `create_revision == 0`.
