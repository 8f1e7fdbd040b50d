//! URLs of the services the tests run against, overridable through the environment.

/// Default PostgreSQL URL (trust authentication on the local server).
pub const POSTGRES_DEFAULT: &str = "postgres://root:root@127.0.0.1:5432/test";
/// Default MySQL/MariaDB URL.
pub const MYSQL_DEFAULT: &str = "mysql://root@127.0.0.1:3306/test";
/// Default Redis URL.
pub const REDIS_DEFAULT: &str = "redis://127.0.0.1:6379";
/// Default ZooKeeper URL (standalone server started by scripts/services).
pub const ZOOKEEPER_DEFAULT: &str = "zookeeper://127.0.0.1:2181";
/// Default etcd URL (single member started by scripts/services).
pub const ETCD_DEFAULT: &str = "etcd://127.0.0.1:2379";

fn from_env(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// `SNOWDRIFT_TEST_POSTGRES`, or [`POSTGRES_DEFAULT`].
pub fn postgres() -> String {
    from_env("SNOWDRIFT_TEST_POSTGRES", POSTGRES_DEFAULT)
}

/// `SNOWDRIFT_TEST_MYSQL`, or [`MYSQL_DEFAULT`].
pub fn mysql() -> String {
    from_env("SNOWDRIFT_TEST_MYSQL", MYSQL_DEFAULT)
}

/// `SNOWDRIFT_TEST_REDIS`, or [`REDIS_DEFAULT`].
pub fn redis() -> String {
    from_env("SNOWDRIFT_TEST_REDIS", REDIS_DEFAULT)
}

/// `SNOWDRIFT_TEST_ZOOKEEPER`, or [`ZOOKEEPER_DEFAULT`].
pub fn zookeeper() -> String {
    from_env("SNOWDRIFT_TEST_ZOOKEEPER", ZOOKEEPER_DEFAULT)
}

/// `SNOWDRIFT_TEST_ETCD`, or [`ETCD_DEFAULT`].
pub fn etcd() -> String {
    from_env("SNOWDRIFT_TEST_ETCD", ETCD_DEFAULT)
}
