//! A database of a test's own for `snowdrift_id`, on PostgreSQL (a schema) or MariaDB (a
//! database: its `snowdrift_id` and `snowdrift_ids` are one per database), and what the
//! tests ask of either: sessions, one ID, many, the worker ID an ID was issued under.

use std::collections::{HashMap, HashSet};

use snowdrift_core::layout::{Layout, Role};
use snowdrift_store::sql_functions::InstallOptions;
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use crate::common;

/// Which database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Postgres,
    MariaDb,
}

/// Both databases, for tests that run on each.
pub const BOTH: [Kind; 2] = [Kind::Postgres, Kind::MariaDb];

/// A schema (PostgreSQL) or database (MariaDB) of the test's own, for generator `g`.
#[derive(Clone)]
pub struct Db {
    pub kind: Kind,
    /// The URL the functions are installed through (MariaDB: naming the test's database).
    pub url: String,
    /// The schema or database the functions go into.
    pub schema: String,
    /// The servers' worker table (or a registry's namespace).
    pub table: String,
    pub layout: Layout,
}

/// `base` with its database replaced by `name`.
pub fn with_database(base: &str, name: &str) -> String {
    match base.rfind('/') {
        Some(i) if base[..i].contains("://") && base[..i].len() > "mysql://".len() => {
            format!("{}/{name}", &base[..i])
        }
        _ => format!("{base}/{name}"),
    }
}

impl Db {
    /// An empty schema or database, with nothing installed; Twitter's layout.
    pub async fn empty(kind: Kind) -> Self {
        Self::empty_with(kind, Layout::preset("twitter").unwrap()).await
    }

    /// An empty schema or database whose generator has layout `layout`.
    pub async fn empty_with(kind: Kind, layout: Layout) -> Self {
        sqlx::any::install_default_drivers();
        let (url, schema) = match kind {
            Kind::Postgres => {
                let url = common::url("postgres");
                let schema = common::table("sdf");
                raw(&url, format!("CREATE SCHEMA {schema}")).await;
                (url, schema)
            }
            Kind::MariaDb => {
                let base = common::url("mysql");
                let name = common::table("sdm");
                raw(&base, format!("CREATE DATABASE {name}")).await;
                (with_database(&base, &name), name)
            }
        };
        Self {
            kind,
            url,
            schema,
            table: common::table("sdw"),
            layout,
        }
    }

    /// The options of generator `g` in this schema, reserving `workers` worker IDs.
    pub fn options(&self, workers: u64) -> InstallOptions {
        let mut options = InstallOptions::new("g", self.layout.clone(), self.table.clone());
        if self.kind == Kind::Postgres {
            options.schema = Some(self.schema.clone());
        }
        options.workers = workers;
        options
    }

    pub async fn session(&self) -> AnyConnection {
        AnyConnection::connect(&self.url).await.unwrap()
    }

    pub async fn raw(&self, sql: &str) {
        raw(&self.url, sql.to_string()).await;
    }

    /// The statement that makes one ID.
    pub fn one(&self) -> String {
        match self.kind {
            Kind::Postgres => format!("SELECT {}.snowdrift_id('g')", self.schema),
            Kind::MariaDb => "SELECT snowdrift_id('g')".into(),
        }
    }

    pub async fn id(&self, conn: &mut AnyConnection) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(AssertSqlSafe(self.one()))
            .fetch_one(conn)
            .await
    }

    /// `n` IDs from one call of `snowdrift_ids` (MariaDB's answers a JSON array).
    pub async fn many(&self, conn: &mut AnyConnection, n: u32) -> Result<Vec<i64>, sqlx::Error> {
        match self.kind {
            Kind::Postgres => {
                sqlx::query_scalar(AssertSqlSafe(format!(
                    "SELECT * FROM {}.snowdrift_ids('g', {n})",
                    self.schema
                )))
                .fetch_all(conn)
                .await
            }
            Kind::MariaDb => {
                let json: String =
                    sqlx::query_scalar(AssertSqlSafe(format!("SELECT snowdrift_ids('g', {n})")))
                        .fetch_one(conn)
                        .await?;
                Ok(serde_json::from_str(&json).unwrap())
            }
        }
    }

    /// Sets the session's test clock (`InstallOptions::test_clock`) `ms` off the real one.
    pub async fn set_offset(&self, conn: &mut AnyConnection, ms: i64) {
        let sql = match self.kind {
            Kind::Postgres => format!("SET snowdrift.test_clock_offset_ms = '{ms}'"),
            Kind::MariaDb => format!("SET @snowdrift_test_clock_offset_ms = {ms}"),
        };
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(conn)
            .await
            .unwrap();
    }

    /// The server's ID of session `conn`, for [`kill`](Self::kill).
    pub async fn session_id(&self, conn: &mut AnyConnection) -> i64 {
        let sql = match self.kind {
            Kind::Postgres => "SELECT pg_backend_pid()::bigint",
            Kind::MariaDb => "SELECT CAST(CONNECTION_ID() AS SIGNED)",
        };
        sqlx::query_scalar(sql).fetch_one(conn).await.unwrap()
    }

    /// Ends session `id` from `admin`, in the middle of whatever it does.
    pub async fn kill(&self, admin: &mut AnyConnection, id: i64) {
        let sql = match self.kind {
            Kind::Postgres => format!("SELECT pg_terminate_backend({id})::int"),
            Kind::MariaDb => format!("KILL {id}"),
        };
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(admin)
            .await
            .unwrap();
    }

    pub fn worker_of(&self, id: i64) -> u64 {
        worker_of(&self.layout, id as u64)
    }

    /// Whether the servers' worker table exists in the database.
    pub async fn has_table(&self) -> bool {
        let sql = match self.kind {
            Kind::Postgres => format!(
                "SELECT COUNT(*) FROM pg_tables WHERE tablename = '{}'",
                self.table
            ),
            Kind::MariaDb => format!(
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{}'",
                self.table
            ),
        };
        let mut c = self.session().await;
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .fetch_one(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
        n > 0
    }

    pub async fn drop(self) {
        match self.kind {
            Kind::Postgres => {
                self.raw(&format!(
                    "DROP SCHEMA {} CASCADE; DROP TABLE IF EXISTS {}",
                    self.schema, self.table
                ))
                .await
            }
            Kind::MariaDb => self.raw(&format!("DROP DATABASE {}", self.schema)).await,
        }
    }
}

/// The worker ID (all node fields) of `id` under `layout`.
pub fn worker_of(layout: &Layout, id: u64) -> u64 {
    let d = layout.decode(id).unwrap();
    layout
        .fields()
        .iter()
        .zip(&d.values)
        .filter(|(f, _)| f.role() == Role::Node)
        .fold(0, |w, (f, v)| (w << f.bits()) | v)
}

/// The IDs are distinct and, per worker ID, rise in the order they were issued.
pub fn check_unique_and_rising(db: &Db, issued: &[i64]) {
    let mut seen = HashSet::new();
    let mut last: HashMap<u64, i64> = HashMap::new();
    for id in issued {
        assert!(seen.insert(*id), "ID {id} issued twice");
        let w = db.worker_of(*id);
        if let Some(before) = last.insert(w, *id) {
            assert!(*id > before, "worker {w}: {id} issued after {before}");
        }
    }
}

async fn raw(url: &str, sql: String) {
    sqlx::any::install_default_drivers();
    let mut c = AnyConnection::connect(url).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
}
