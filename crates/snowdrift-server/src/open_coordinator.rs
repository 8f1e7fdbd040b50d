//! Which coordinators take writes from clients without credentials, for the warnings of
//! worker registries and segment stores (a tso refuses such an etcd: `kinds::tso`). Anyone
//! who can reach such a coordinator can forge a lease, lower a mark or a tag's `max_id`.

/// The coordinator a worker registry at `url` leases on, when it takes writes from clients
/// without credentials: an etcd that answers an anonymous client (asked), else
/// [`by_url`].
pub async fn registry(url: &str, namespace: &str) -> Option<&'static str> {
    if url.starts_with("etcd://") || url.starts_with("http://") || url.starts_with("https://") {
        let prefix = format!("/{namespace}/");
        return snowdrift_store::etcd_takes_anonymous_requests(url, &prefix)
            .await
            .unwrap_or(false)
            .then_some("etcd");
    }
    by_url(url)
}

/// `ZooKeeper` or `Redis` when `url` names one without a user or password: such a client is
/// accepted only by a server that takes anyone's writes.
pub fn by_url(url: &str) -> Option<&'static str> {
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
    if authority.contains('@') {
        return None;
    }
    if url.starts_with("zookeeper://") {
        Some("ZooKeeper")
    } else if url.starts_with("redis://") || url.starts_with("rediss://") {
        Some("Redis")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::by_url;

    #[test]
    fn a_url_without_credentials_names_its_coordinator() {
        assert_eq!(by_url("zookeeper://127.0.0.1:2181/sd"), Some("ZooKeeper"));
        assert_eq!(by_url("redis://127.0.0.1:6379/2"), Some("Redis"));
        assert_eq!(by_url("rediss://h:6380"), Some("Redis"));
        // A password, or a user alone (an ACL user), says the server asks for them.
        assert_eq!(by_url("redis://:pw@127.0.0.1:6379"), None);
        assert_eq!(by_url("zookeeper://snowdrift:pw@h:2181/sd"), None);
        // An '@' past the host is not credentials.
        assert_eq!(by_url("redis://h:6379/2?name=a@b"), Some("Redis"));
        // SQL always logs in; files are this machine's.
        assert_eq!(by_url("postgres://root@h/test"), None);
        assert_eq!(by_url("sqlite://ids.db"), None);
    }
}
