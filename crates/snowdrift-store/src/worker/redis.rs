//! Worker leases in Redis: `SET key holder NX PX ttl`, renewed and released by a compare-and-set script.
