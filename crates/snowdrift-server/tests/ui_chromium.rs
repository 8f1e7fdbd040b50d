//! The dashboard in a real browser: headless Chromium (Debian's `chromium`, which
//! scripts/services installs) loads `/ui` from a running server, runs its script, and the
//! DOM it leaves must hold the server's real values: every generator with its kind and
//! layout, the IDs issued, and a tag's segment buffer numbers as `/v1/generators` reports them.
//!
//! Set `SNOWDRIFT_CHROMIUM` to use another Chromium binary.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Long enough for several one-second refreshes: Chromium runs the page's timers on virtual
/// time, so this costs far less than 8 s of wall time.
const VIRTUAL_TIME_MS: u32 = 8_000;
/// A loaded 2-core CI machine starts Chromium slowly; past this it is stuck, not slow.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(180);

fn chromium() -> String {
    if let Ok(path) = std::env::var("SNOWDRIFT_CHROMIUM") {
        return path;
    }
    for name in ["chromium", "chromium-browser"] {
        let found = Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if found {
            return name.to_string();
        }
    }
    panic!(
        "no chromium found: install Debian's chromium (scripts/services does) or set SNOWDRIFT_CHROMIUM"
    );
}

/// The DOM of `url` after its scripts ran for `VIRTUAL_TIME_MS` of virtual time.
fn dump_dom(url: &str, profile: &std::path::Path) -> String {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            // Tests run as root in CI, where Chromium's sandbox cannot start.
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--virtual-time-budget={VIRTUAL_TIME_MS}"))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // Read both pipes on their own threads so Chromium never blocks on a full one.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if start.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let dom = out
        .join()
        .expect("stdout reader")
        .expect("chromium's stdout");
    let log = err.join().expect("stderr reader");
    assert!(status.success(), "chromium failed ({status}): {log}");
    assert!(
        dom.contains("</html>"),
        "no DOM from chromium: {dom}\n{log}"
    );
    dom
}

/// The opening tag through `</tr>` of the row with attribute `attr`.
fn row<'a>(dom: &'a str, attr: &str) -> &'a str {
    let start = dom
        .find(&format!("<tr {attr}>"))
        .unwrap_or_else(|| panic!("no row <tr {attr}> in the DOM:\n{dom}"));
    let len = dom[start..].find("</tr>").expect("row ends");
    &dom[start..start + len]
}

/// The element with attribute `attr` through the end of its tag's name's closing tag.
fn block<'a>(dom: &'a str, attr: &str) -> &'a str {
    let at = dom
        .find(attr)
        .unwrap_or_else(|| panic!("no element with {attr} in the DOM:\n{dom}"));
    let start = dom[..at].rfind('<').expect("element opens");
    let name: String = dom[start + 1..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let len = dom[start..]
        .find(&format!("</{name}>"))
        .expect("element closes");
    &dom[start..start + len]
}

/// The text of the element with `data-field="field"` in `html`.
fn field<'a>(html: &'a str, field: &str) -> &'a str {
    let at = html
        .find(&format!("data-field=\"{field}\""))
        .unwrap_or_else(|| panic!("no field {field} in {html}"));
    let text = &html[at..];
    let open = text.find('>').expect("tag closes") + 1;
    let close = text[open..].find('<').expect("text ends");
    &text[open..open + close]
}

/// A number as the page shows it ("1,000"), as digits.
fn digits(text: &str) -> String {
    text.replace(',', "")
}

/// The status entry of `tag`'s segment buffer.
async fn buffer(s: &support::TestServer, tag: &str) -> Value {
    let status = s.json("/v1/generators", 200).await;
    status["segment_buffers"]
        .as_array()
        .expect("segment_buffers")
        .iter()
        .find(|b| b["tag"] == tag)
        .unwrap_or_else(|| panic!("no buffer for {tag}: {status}"))
        .clone()
}

/// `tag`'s buffer once its background refill has settled: two reads a second apart agree.
async fn settled_buffer(s: &support::TestServer, tag: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = buffer(s, tag).await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = buffer(s, tag).await;
        if now == last {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "the buffer of {tag} kept changing: {now}"
        );
        last = now;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_real_values_in_headless_chromium() {
    let s = support::start("snowdrift-ui", "").await;
    let tag = snowdrift_testkit::unique_name("ui");
    s.post(
        "/v1/tags",
        &format!(r#"{{"tag": "{tag}", "step": 100}}"#),
        201,
    )
    .await;
    let v = s.json(&format!("/v1/ids/{tag}?count=7"), 200).await;
    assert_eq!(v["ids"].as_array().map(Vec::len), Some(7));
    s.json("/v1/ids/snowflake?count=5", 200).await;

    let status = s.json("/v1/generators", 200).await;
    let profile = s.dir.join("chromium-profile");
    let url = format!("{}/ui", s.base);

    // Nothing issues IDs while the page loads, so only a background refill can change the
    // buffer; retry if one landed between reading the status and Chromium's last refresh.
    let mut attempt = 0;
    let (dom, expected) = loop {
        attempt += 1;
        let before = settled_buffer(&s, &tag).await;
        let dom = tokio::task::spawn_blocking({
            let (url, profile) = (url.clone(), profile.clone());
            move || dump_dom(&url, &profile)
        })
        .await
        .expect("chromium thread");
        let after = buffer(&s, &tag).await;
        if before == after {
            break (dom, after);
        }
        assert!(attempt < 3, "the buffer of {tag} kept changing: {after}");
    };

    // The script ran and refreshed more than once (rates need two samples).
    let refreshes: u32 = dom
        .split("data-refreshes=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("body carries data-refreshes");
    assert!(refreshes >= 2, "only {refreshes} refreshes ran:\n{dom}");
    assert!(
        dom.contains(r#"id="ready" class="badge" data-state="ready""#),
        "readiness badge:\n{dom}"
    );
    assert!(
        dom.contains(r#"id="problems" class="problems" hidden"#),
        "the page reported problems:\n{dom}"
    );

    // Every generator the server reports, with its kind and layout.
    let generators = status["generators"].as_array().expect("generators");
    assert!(generators.len() >= 4, "{status}");
    for g in generators {
        let name = g["name"].as_str().expect("name");
        let r = row(&dom, &format!("data-generator=\"{name}\""));
        assert_eq!(field(r, "name"), name);
        assert_eq!(field(r, "kind"), g["kind"].as_str().expect("kind"), "{r}");
        if let Some(layout) = g["layout"].as_str() {
            assert_eq!(field(r, "layout"), layout, "{r}");
        }
        assert_eq!(field(r, "ready"), "ready", "{r}");
    }
    // What a generator reports as an object (its worker lease, once leases exist) is drawn
    // as a block of its own, with the lease's identity as the server reports it.
    for g in generators {
        let name = g["name"].as_str().expect("name");
        for (key, value) in g.as_object().expect("generator object") {
            if !value.is_object() {
                continue;
            }
            let section = block(&dom, &format!("data-section=\"{name}.{key}\""));
            for f in ["worker_id", "state", "holder"] {
                let Some(v) = value.get(f) else { continue };
                let want = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                assert_eq!(
                    digits(field(section, f)),
                    want,
                    "{name}.{key}.{f}: {section}"
                );
            }
        }
    }

    let snowflake = row(&dom, "data-generator=\"snowflake\"");
    assert_eq!(field(snowflake, "layout"), "twitter");
    assert_eq!(digits(field(snowflake, "issued")), "5", "{snowflake}");
    assert!(
        field(snowflake, "rate").parse::<f64>().is_ok(),
        "a rate, not a dash: {snowflake}"
    );

    // The tag's buffer: exactly what the server reports.
    let r = row(&dom, &format!("data-tag=\"{tag}\""));
    assert_eq!(field(r, "tag"), tag);
    for key in [
        "current_left",
        "current_len",
        "segments_ahead",
        "ids_ahead",
        "target_ahead",
        "refills",
        "starved",
    ] {
        assert_eq!(
            digits(field(r, key)),
            expected[key].to_string(),
            "{key} of {tag}: {r}"
        );
    }
    assert_eq!(expected["current_len"], 100, "{expected}");
    assert_eq!(expected["current_left"], 93, "{expected}");
    assert_eq!(digits(field(r, "issued")), "7", "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_is_self_contained() {
    let s = support::start("snowdrift-ui-assets", "").await;
    for (path, media) in [
        ("/ui", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/style.css", "text/css"),
    ] {
        let r = s
            .client
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let header = |name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert!(header("content-type").starts_with(media), "{path}");
        // Only this server's own script, style and API: nothing from a CDN.
        let csp = header("content-security-policy");
        assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        let body = r.text().await.unwrap();
        assert!(
            !body.contains("http://") && !body.contains("https://") && !body.contains("//cdn"),
            "{path} refers to another origin"
        );
    }
}
