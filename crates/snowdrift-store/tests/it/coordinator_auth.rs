//! The coordinators' own protection, used: an etcd this test starts with TLS, client
//! certificate auth and RBAC (Debian's etcd-server, the binary scripts/services installs),
//! and the local ZooKeeper with digest auth. snowdrift works through them, and a client
//! without the credentials cannot write snowdrift's keys or znodes, which is what would let
//! it make nodes issue duplicates (a forged lease, a lowered mark, a reset tag).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Certificate, Client, ConnectOptions, Identity, Permission, TlsOptions};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use snowdrift_store::Error;
use snowdrift_store::segment::{NewTag, SegmentStore};
use snowdrift_store::tso::{Campaign, EtcdTso};
use snowdrift_store::worker::WorkerRegistry;
use snowdrift_store::worker::etcd::EtcdRegistry;
use snowdrift_store::worker::zookeeper::ZkRegistry;
use snowdrift_store::zk_version::ZkVersion;
use snowdrift_testkit::unique_name;
use zookeeper_client as zk;

const TTL: Duration = Duration::from_secs(10);
const ROOT_PASSWORD: &str = "root-Pw-1";
const PASSWORD: &str = "s3cret:p@ss";
/// [`PASSWORD`] as a URL's userinfo writes it.
const PASSWORD_IN_URL: &str = "s3cret:p%40ss";

/// A CA and the certificates it signs, as PEM files in a directory.
struct Pki {
    dir: PathBuf,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl Pki {
    fn new(dir: &Path, name: &str) -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        let ca = params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join(format!("{name}-ca.pem")), ca.pem()).unwrap();
        Self {
            dir: dir.to_path_buf(),
            ca,
            ca_key,
        }
    }

    /// Signs a certificate for `common_name` (and the local addresses): its PEM files.
    fn issue(&self, file: &str, common_name: &str) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        let (cert_file, key_file) = (
            self.dir.join(format!("{file}.pem")),
            self.dir.join(format!("{file}-key.pem")),
        );
        std::fs::write(&cert_file, cert.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        (cert_file, key_file)
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An etcd of its own, serving TLS only to clients with a certificate of its CA, with RBAC
/// on: `root` and `snowdrift` (readwrite on `/{prefix}` only) as users. Killed and its
/// directory removed on drop, even when a test fails.
struct SecureEtcd {
    child: Child,
    dir: PathBuf,
    port: u16,
    ca: PathBuf,
    /// Signed by etcd's CA, common name `snowdrift`.
    cert: (PathBuf, PathBuf),
    /// Signed by etcd's CA, common name `intruder` (no etcd user).
    intruder: (PathBuf, PathBuf),
    /// Signed by another CA.
    stranger: (PathBuf, PathBuf),
    /// The key prefix the `snowdrift` user may read and write.
    prefix: String,
}

impl Drop for SecureEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl SecureEtcd {
    async fn start() -> Self {
        let dir = std::env::temp_dir().join(unique_name("snowdrift_etcd_tls"));
        std::fs::create_dir_all(&dir).unwrap();
        let pki = Pki::new(&dir, "etcd");
        let (server_cert, server_key) = pki.issue("server", "etcd");
        let cert = pki.issue("snowdrift", "snowdrift");
        let intruder = pki.issue("intruder", "intruder");
        let stranger = Pki::new(&dir, "other").issue("stranger", "snowdrift");
        let (port, peer) = (free_port(), free_port());
        let client_url = format!("https://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log")).unwrap();
        let binary = std::env::var("SNOWDRIFT_TEST_ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let child = Command::new(&binary)
            .arg("--name=tls")
            .arg(format!("--data-dir={}", dir.join("data").display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=tls={peer_url}"))
            .arg("--client-cert-auth")
            // Tokens die after a second idle, so the tests see snowdrift log in again.
            .arg("--auth-token-ttl=1")
            .arg(format!("--trusted-ca-file={}", dir.join("etcd-ca.pem").display()))
            .arg(format!("--cert-file={}", server_cert.display()))
            .arg(format!("--key-file={}", server_key.display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {binary:?} ({e}); install Debian's etcd-server (scripts/services does)")
            });
        let etcd = Self {
            child,
            ca: dir.join("etcd-ca.pem"),
            dir,
            port,
            cert,
            intruder,
            stranger,
            prefix: format!("/{}/", unique_name("sd")),
        };
        etcd.set_up_users().await;
        etcd
    }

    /// A raw client as `cert` (and `user`, if given), for setup and for attacks.
    async fn raw(
        &self,
        cert: Option<&(PathBuf, PathBuf)>,
        user: Option<(&str, &str)>,
    ) -> Result<Client, etcd_client::Error> {
        let mut tls = TlsOptions::new()
            .ca_certificate(Certificate::from_pem(std::fs::read(&self.ca).unwrap()));
        if let Some((cert, key)) = cert {
            tls = tls.identity(Identity::from_pem(
                std::fs::read(cert).unwrap(),
                std::fs::read(key).unwrap(),
            ));
        }
        let mut options = ConnectOptions::new()
            .with_tls(tls)
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(3));
        if let Some((user, password)) = user {
            options = options.with_user(user, password);
        }
        Client::connect([format!("https://127.0.0.1:{}", self.port)], Some(options)).await
    }

    /// Waits for etcd, adds `root` and `snowdrift` with its role, and turns auth on.
    async fn set_up_users(&self) {
        let started = Instant::now();
        let mut client = loop {
            if let Ok(mut c) = self.raw(Some(&self.cert), None).await
                && c.status().await.is_ok()
            {
                break c;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "etcd did not answer within 30 s; see {}",
                self.dir.join("etcd.log").display()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        client.user_add("root", ROOT_PASSWORD, None).await.unwrap();
        client.user_grant_role("root", "root").await.unwrap();
        client.role_add("snowdrift").await.unwrap();
        client
            .role_grant_permission(
                "snowdrift",
                Permission::read_write(self.prefix.clone()).with_prefix(),
            )
            .await
            .unwrap();
        client.user_add("snowdrift", PASSWORD, None).await.unwrap();
        client
            .user_grant_role("snowdrift", "snowdrift")
            .await
            .unwrap();
        client.auth_enable().await.unwrap();
    }

    /// The namespace under the `snowdrift` user's prefix.
    fn namespace(&self) -> String {
        self.prefix.trim_matches('/').to_string()
    }

    /// snowdrift's URL for this etcd as `user:password`, with the CA and `cert`.
    fn url(&self, userinfo: &str, cert: &(PathBuf, PathBuf)) -> String {
        format!(
            "https://{userinfo}@127.0.0.1:{}?ca={}&cert={}&key={}",
            self.port,
            self.ca.display(),
            cert.0.display(),
            cert.1.display()
        )
    }
}

/// The same error, for one more use (etcd-client's is not `Clone`).
fn clone_error(e: &etcd_client::Error) -> etcd_client::Error {
    etcd_client::Error::InvalidArgs(e.to_string())
}

/// What a put by `client` says, `None` when it went through.
async fn put_refused(client: Result<Client, etcd_client::Error>, key: &str) -> Option<String> {
    let mut client = match client {
        Ok(client) => client,
        Err(e) => return Some(format!("connect: {e}")),
    };
    match client.put(key, "forged", None).await {
        Ok(_) => None,
        Err(e) => Some(format!("{e:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_with_tls_client_certs_and_rbac_serves_snowdrift_and_refuses_everyone_else() {
    let etcd = SecureEtcd::start().await;
    let ns = etcd.namespace();
    let url = etcd.url(&format!("snowdrift:{PASSWORD_IN_URL}"), &etcd.cert);

    // snowdrift works through it: a worker ID, a mark, the dispatcher's https:// and a tso
    // election.
    let registry = EtcdRegistry::connect(&url, &ns).await.unwrap();
    let id = registry.claim_free(16, "node-a", TTL, None).await.unwrap();
    assert_eq!(id, 0);
    registry
        .write_mark(id, "node-a", 1_700_000_000_000)
        .await
        .unwrap();
    assert_eq!(
        registry.read_mark(id).await.unwrap(),
        Some(1_700_000_000_000)
    );
    registry.renew(id, "node-a", TTL).await.unwrap();
    // Past the token's life: the next requests log in again rather than fail.
    tokio::time::sleep(Duration::from_secs(3)).await;
    registry.renew(id, "node-a", TTL).await.unwrap();
    registry
        .write_mark(id, "node-a", 1_700_000_000_001)
        .await
        .unwrap();
    let through_dispatch = WorkerRegistry::connect(&url, &ns).await.unwrap();
    assert_eq!(through_dispatch.backend(), "etcd");
    let tso = EtcdTso::connect(&url, &ns, "ts").await.unwrap();
    match tso
        .campaign("node-a", Duration::from_secs(3), Duration::from_millis(600))
        .await
        .unwrap()
    {
        Campaign::Won(l) => l.resign().await.unwrap(),
        other => panic!("no fresh election was won: {other:?}"),
    }

    // A tso generator asks whether anyone could write its leader key (issue 40): not here,
    // with the URL's user and certificate or without them; yes on the test machine's
    // etcd, which has authentication off.
    // Its certificate alone (no password): etcd takes the certificate's name as the user.
    let bare = format!(
        "https://127.0.0.1:{}?ca={}&cert={}&key={}",
        etcd.port,
        etcd.ca.display(),
        etcd.cert.0.display(),
        etcd.cert.1.display()
    );
    for asked in [url.as_str(), bare.as_str()] {
        assert!(
            !snowdrift_store::etcd_takes_anonymous_requests(asked, &format!("/{ns}/"))
                .await
                .unwrap(),
            "{asked}"
        );
    }
    assert!(
        snowdrift_store::etcd_takes_anonymous_requests(
            &snowdrift_testkit::urls::etcd(),
            "/snowdrift"
        )
        .await
        .unwrap()
    );

    // Nobody else writes the lease key, whatever they lack.
    let lease_key = format!("/{ns}/worker/0");
    let mark_key = format!("/{ns}/mark/0");
    for (who, client) in [
        ("no client certificate", etcd.raw(None, None).await),
        (
            "a certificate of another CA",
            etcd.raw(Some(&etcd.stranger), None).await,
        ),
        (
            "etcd's CA's certificate of a name that is no user",
            etcd.raw(Some(&etcd.intruder), None).await,
        ),
        (
            "a good certificate and a wrong password",
            etcd.raw(Some(&etcd.cert), Some(("snowdrift", "guess")))
                .await,
        ),
    ] {
        for key in [&lease_key, &mark_key] {
            // A client refused before its first request is refused too.
            let refused = put_refused(client.as_ref().cloned().map_err(clone_error), key).await;
            assert!(refused.is_some(), "{who} wrote {key}");
        }
    }
    // Plain gRPC to the TLS port is no way in either.
    let plain = Client::connect(
        [format!("http://127.0.0.1:{}", etcd.port)],
        Some(ConnectOptions::new().with_timeout(Duration::from_secs(3))),
    )
    .await;
    assert!(
        put_refused(plain, &lease_key).await.is_some(),
        "plain gRPC wrote"
    );
    assert_eq!(
        registry.holders().await.unwrap(),
        vec![(0, "node-a".to_string())]
    );
    assert_eq!(
        registry.read_mark(id).await.unwrap(),
        Some(1_700_000_000_001)
    );
    registry.release(id, "node-a").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_credentials_and_certificate_mistakes_are_named() {
    let etcd = SecureEtcd::start().await;
    let ns = etcd.namespace();

    let wrong = etcd.url("snowdrift:guess", &etcd.cert);
    let e = EtcdRegistry::connect(&wrong, &ns).await.unwrap_err();
    let said = e.to_string();
    assert!(matches!(e, Error::AccessDenied(_)), "{e:?}");
    assert!(
        said.contains("refused the user \"snowdrift\"")
            && said.contains("check the user and password"),
        "{said}"
    );
    assert!(!said.contains("guess"), "the password is shown: {said}");

    // The right user outside its role's prefix.
    let url = etcd.url(&format!("snowdrift:{PASSWORD_IN_URL}"), &etcd.cert);
    let e = EtcdRegistry::connect(&url, "elsewhere").await.unwrap_err();
    assert!(matches!(e, Error::AccessDenied(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("readwrite on the prefix /elsewhere/"),
        "{e}"
    );

    // Certificates: missing, not PEM, a key that is no key, half a pair, TLS options on
    // plain etcd://.
    let missing = etcd.dir.join("nowhere.pem");
    let garbage = etcd.dir.join("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let (cert, key) = &etcd.cert;
    let port = etcd.port;
    let ca = etcd.ca.display();
    for (url, says) in [
        (
            format!("https://127.0.0.1:{port}?ca={}", missing.display()),
            "cannot be read",
        ),
        (
            format!("https://127.0.0.1:{port}?ca={}", garbage.display()),
            "holds no PEM certificate",
        ),
        (
            format!(
                "https://127.0.0.1:{port}?ca={ca}&cert={}&key={}",
                cert.display(),
                garbage.display()
            ),
            "holds no PEM private key",
        ),
        (
            format!("https://127.0.0.1:{port}?ca={ca}&cert={}", cert.display()),
            "cert is given without key",
        ),
        (format!("etcd://127.0.0.1:{port}?ca={ca}"), "write https://"),
    ] {
        let e = EtcdRegistry::connect(&url, &ns).await.unwrap_err();
        assert!(matches!(e, Error::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(e.to_string().contains(says), "{url}: {e}");
    }
    // A CA that did not sign etcd's certificate: the TLS failure is named, with what to check.
    let (other_ca, _) = (etcd.dir.join("other-ca.pem"), ());
    let url = format!(
        "https://snowdrift:{PASSWORD_IN_URL}@127.0.0.1:{port}?ca={}&cert={}&key={}",
        other_ca.display(),
        cert.display(),
        key.display()
    );
    let e = EtcdRegistry::connect(&url, &ns).await.unwrap_err();
    let said = e.to_string();
    assert!(said.contains("signed by the ca given"), "{said}");
    assert!(!said.contains("s3cret"), "the password is shown: {said}");
}

/// A ZooKeeper client as `digest` (`user:password`), or as nobody.
async fn zk_client(digest: Option<&str>) -> zk::Client {
    let url = snowdrift_testkit::urls::zookeeper();
    let cluster = url.trim_start_matches("zookeeper://");
    let connector = zk::Client::connector();
    let connector = match digest {
        Some(d) => connector.with_auth("digest", d.as_bytes()),
        None => connector,
    };
    connector.connect(cluster).await.unwrap()
}

fn zk_url(userinfo: &str) -> String {
    snowdrift_testkit::urls::zookeeper().replacen(
        "zookeeper://",
        &format!("zookeeper://{userinfo}@"),
        1,
    )
}

/// What an unauthenticated client (and one with a wrong password) gets when it changes,
/// deletes or adds to snowdrift's znodes: `NoAuth` each time, while reading still works.
async fn outsiders_cannot_write(znode: &str, dir: &str) {
    for outsider in [
        zk_client(None).await,
        zk_client(Some("snowdrift:guess")).await,
    ] {
        assert!(
            outsider.get_data(znode).await.is_ok(),
            "{znode} cannot be read"
        );
        assert_eq!(
            outsider.set_data(znode, b"forged", None).await.err(),
            Some(zk::Error::NoAuth),
            "setData {znode}"
        );
        assert_eq!(
            outsider.delete(znode, None).await.err(),
            Some(zk::Error::NoAuth),
            "delete {znode}"
        );
        assert_eq!(
            outsider
                .create(
                    &format!("{dir}/planted"),
                    b"",
                    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
                )
                .await
                .err(),
            Some(zk::Error::NoAuth),
            "create under {dir}"
        );
        assert_eq!(
            outsider
                .set_acl(znode, &zk::Acls::anyone_all(), None)
                .await
                .err(),
            Some(zk::Error::NoAuth),
            "setAcl {znode}"
        );
    }
}

/// Deletes `root` and everything under it, as the user that owns it.
async fn zk_remove(root: &str) {
    let client = zk_client(Some(&format!("snowdrift:{PASSWORD}"))).await;
    let mut stack = vec![root.to_string()];
    let mut order = Vec::new();
    while let Some(path) = stack.pop() {
        if let Ok(children) = client.list_children(&path).await {
            stack.extend(children.into_iter().map(|c| format!("{path}/{c}")));
        }
        order.push(path);
    }
    for path in order.into_iter().rev() {
        let _ = client.delete(&path, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_znodes_are_writable_only_with_the_digest() {
    let ns = unique_name("zkauth");
    let url = zk_url(&format!("snowdrift:{PASSWORD_IN_URL}"));

    // The worker registry: a worker ID and a mark.
    let registry = ZkRegistry::connect(&url, &ns).await.unwrap();
    let id = registry.claim_free(16, "node-a", TTL, None).await.unwrap();
    registry
        .write_mark(id, "node-a", 1_700_000_000_000)
        .await
        .unwrap();
    outsiders_cannot_write(&format!("/{ns}/mark/{id}"), &format!("/{ns}/mark")).await;
    outsiders_cannot_write(&format!("/{ns}/lease/{id}"), &format!("/{ns}/lease")).await;
    outsiders_cannot_write(&format!("/{ns}/lease"), &format!("/{ns}")).await;
    assert_eq!(
        registry.read_mark(id).await.unwrap(),
        Some(1_700_000_000_000)
    );
    registry.renew(id, "node-a", TTL).await.unwrap();

    // A wrong password is another digest identity: snowdrift does not start, and says why.
    let e = ZkRegistry::connect(&zk_url("snowdrift:guess"), &ns)
        .await
        .unwrap_err();
    assert!(matches!(e, Error::AccessDenied(_)), "{e:?}");
    let said = e.to_string();
    assert!(
        said.contains("refused user \"snowdrift\"") && said.contains("check the user and password"),
        "{said}"
    );
    assert!(!said.contains("guess"), "the password is shown: {said}");
    drop(registry);

    // The segment store: a tag.
    let table = format!("{ns}_seg");
    let store = SegmentStore::connect(&url, &table).await.unwrap();
    store
        .create_tag(&NewTag {
            tag: "orders".into(),
            step: 1000,
            description: None,
            template: None,
        })
        .await
        .unwrap();
    store.claim("orders", None).await.unwrap();
    outsiders_cannot_write(&format!("/{table}/orders"), &format!("/{table}")).await;

    // zk-version: the znode and its parent.
    let version_path = format!("/{ns}_v/ids/orders");
    let versions = ZkVersion::connect(&url, &version_path).await.unwrap();
    assert_eq!(versions.next(3).await.unwrap().len(), 3);
    outsiders_cannot_write(&version_path, &format!("/{ns}_v/ids")).await;
    // Right under /, anyone could delete it and start its version at 0 again.
    let top = format!("/{ns}_top");
    let e = ZkVersion::connect(&url, &top).await.unwrap_err();
    assert!(e.to_string().contains("one level down"), "{e}");
    assert!(
        zk_client(None)
            .await
            .check_stat(&top)
            .await
            .unwrap()
            .is_none(),
        "created before refusing"
    );

    for root in [format!("/{ns}"), format!("/{table}"), format!("/{ns}_v")] {
        zk_remove(&root).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_znodes_left_open_get_the_users_acl() {
    let ns = unique_name("zkopen");
    // A registry run without a user leaves open znodes behind; it still holds a lease.
    let open = ZkRegistry::connect(&snowdrift_testkit::urls::zookeeper(), &ns)
        .await
        .unwrap();
    let id = open.claim_free(16, "node-a", TTL, None).await.unwrap();
    open.write_mark(id, "node-a", 1_700_000_000_000)
        .await
        .unwrap();
    let mark = format!("/{ns}/mark/{id}");
    let anyone = zk_client(None).await;
    let (_, stat) = anyone.get_data(&mark).await.unwrap();
    assert!(
        anyone
            .set_data(&mark, b"1", Some(stat.version))
            .await
            .is_ok(),
        "the open mark could be lowered"
    );
    anyone
        .set_data(&mark, b"1700000000000", None)
        .await
        .unwrap();

    // The first start with a user takes them over, the running node's lease included.
    let url = zk_url(&format!("snowdrift:{PASSWORD_IN_URL}"));
    let registry = ZkRegistry::connect(&url, &ns).await.unwrap();
    outsiders_cannot_write(&mark, &format!("/{ns}/mark")).await;
    outsiders_cannot_write(&format!("/{ns}/lease"), &format!("/{ns}")).await;
    // The node without the user can write neither its mark (so it stops issuing at the end
    // of its durable window) nor its clock report; its ID stays held while its session
    // lives (a renew is a version check, which needs no right).
    for result in [
        open.write_mark(id, "node-a", 1_700_000_000_005).await,
        open.publish_time(id, "node-a", 1_700_000_000_005).await,
    ] {
        assert!(matches!(result, Err(Error::AccessDenied(_))), "{result:?}");
    }
    let other = registry.claim_free(16, "node-b", TTL, None).await.unwrap();
    assert_ne!(other, id, "an ID still held was given out");
    registry
        .write_mark(other, "node-b", 1_700_000_000_001)
        .await
        .unwrap();
    assert_eq!(
        registry.read_mark(id).await.unwrap(),
        Some(1_700_000_000_000)
    );
    drop(open);
    drop(registry);
    zk_remove(&format!("/{ns}")).await;
}
