//! Worker leases in a SQL table (`worker_node`: holder, lease expiry, high-water mark), claimed by a conditional update.
