//! The dashboard in a real browser: headless Chromium (Debian's `chromium`, which
//! scripts/services installs) loads `/ui` from a running server, runs its script, and the
//! DOM it leaves must hold the server's real values: every generator with its kind and
//! layout, the IDs issued, and a tag's segment buffer numbers as `/v1/generators` reports them.
//! With auth on, the page first says it needs a token, and shows the values once a token is
//! typed into it (Chromium driven over the DevTools protocol, keys and all). Under load, the
//! charts draw real points: IDs per second of the generators being asked, a tag's buffer and
//! its refills, request latency quantiles, and the snowflake generator's lease time left.
//!
//! Set `SNOWDRIFT_CHROMIUM` to use another Chromium binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snowdrift_server::auth::{TokenHash, generate_token};

/// Long enough for several one-second refreshes: Chromium runs the page's timers on virtual
/// time, so this costs far less than 8 s of wall time.
const VIRTUAL_TIME_MS: u32 = 8_000;
/// A loaded 2-core CI machine starts Chromium slowly; past this it is stuck, not slow.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a page may take to reach a state it refreshes into every second.
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// Flags for Chromium as tests run it.
const CHROMIUM_FLAGS: [&str; 6] = [
    "--headless",
    // Tests run as root in CI, where Chromium's sandbox cannot start.
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-extensions",
];

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
        .args(CHROMIUM_FLAGS)
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

/// The `<svg>` chart with `data-chart="chart"` (and `data-tag="tag"`, for a tag's chart),
/// opening tag through its closing tag.
fn chart<'a>(dom: &'a str, chart: &str, tag: Option<&str>) -> &'a str {
    let want = format!("data-chart=\"{chart}\"");
    let want_tag = tag.map(|t| format!("data-tag=\"{t}\""));
    let mut from = 0;
    while let Some(at) = dom[from..].find("<svg ") {
        let start = from + at;
        let open = &dom[start..start + dom[start..].find('>').expect("tag closes")];
        let len = dom[start..].find("</svg>").expect("svg closes");
        if open.contains(&want) && want_tag.as_ref().is_none_or(|t| open.contains(t.as_str())) {
            return &dom[start..start + len];
        }
        from = start + len;
    }
    panic!("no chart {want} {want_tag:?} in the DOM:\n{dom}");
}

/// The value of attribute `name` in the opening tag that starts `html`.
fn attr<'a>(html: &'a str, name: &str) -> &'a str {
    let open = &html[..html.find('>').expect("tag closes")];
    let at = open
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {open}"));
    let value = &open[at + name.len() + 3..];
    &value[..value.find('"').expect("value closes")]
}

/// One line of a chart as drawn: the points the script says it drew, its latest value, and
/// the coordinates of each `<polyline>` it is made of.
#[derive(Debug)]
struct Line {
    points: usize,
    last: f64,
    polylines: Vec<Vec<(f64, f64)>>,
}

/// The line named `name` in the chart `svg`.
fn line(svg: &str, name: &str) -> Line {
    let at = svg
        .find(&format!("data-series=\"{name}\""))
        .unwrap_or_else(|| panic!("no line {name} in {svg}"));
    let start = svg[..at].rfind("<g ").expect("a line is a <g>");
    let g = &svg[start..start + svg[start..].find("</g>").expect("g closes")];
    let polylines = g
        .split("<polyline points=\"")
        .skip(1)
        .map(|p| {
            p[..p.find('"').expect("points close")]
                .split(' ')
                .map(|xy| {
                    let (x, y) = xy.split_once(',').expect("x,y");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect()
        })
        .collect();
    Line {
        points: attr(g, "data-points").parse().expect("data-points"),
        last: attr(g, "data-last").parse().unwrap_or(f64::NAN),
        polylines,
    }
}

/// Where the chart draws 0 (its x axis), as a y coordinate.
fn baseline(svg: &str) -> f64 {
    let at = svg.find("data-axis=\"x\"").expect("an x axis");
    let start = svg[..at].rfind('<').expect("axis opens");
    attr(&svg[start..], "y1").parse().expect("y1")
}

/// `name` in `svg` is a drawn line of at least `min_points` points, ending at the right edge
/// (now) with `last`, which must be above 0 when `positive`.
fn assert_drawn(svg: &str, name: &str, min_points: usize, positive: bool) -> Line {
    let l = line(svg, name);
    assert!(l.points >= min_points, "{name}: {l:?}\n{svg}");
    assert!(l.last.is_finite() && l.last >= 0.0, "{name}: {l:?}");
    let latest = l
        .polylines
        .last()
        .unwrap_or_else(|| panic!("{name} has no polyline: {svg}"));
    assert!(latest.len() >= 2, "{name}: {l:?}");
    let (x, y) = *latest.last().expect("a point");
    // The chart is 480 wide with a 14 right margin: the latest point is drawn at now.
    assert!(x > 460.0, "{name} does not reach now: {l:?}");
    if positive {
        assert!(l.last > 0.0, "{name}: {l:?}");
        assert!(y < baseline(svg), "{name} is drawn at 0: {l:?}\n{svg}");
    }
    l
}

/// Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// JSON messages ending in a NUL byte, commands on its fd 3 and answers on its fd 4), with
/// one page attached. Closed and reaped when dropped.
struct Browser {
    child: Child,
    commands: ChildStdin,
    /// Every message Chromium sends, parsed by a reader thread, so a stuck Chromium times a
    /// call out instead of blocking it.
    messages: mpsc::Receiver<Value>,
    next_id: u64,
    session: String,
}

impl Browser {
    /// Starts Chromium with its profile in `profile` and opens a blank page.
    fn start(profile: &std::path::Path) -> Self {
        // The shell hands our pipes to Chromium as fds 3 and 4 (stdin and stdout become
        // /dev/null and stderr), so no unsafe fd juggling is needed here.
        let mut child = Command::new("sh")
            .args(["-c", "exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null >&2"])
            .arg(chromium())
            .args(CHROMIUM_FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--remote-debugging-pipe")
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        let commands = child.stdin.take().expect("piped stdin");
        let answers = child.stdout.take().expect("piped stdout");
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut answers = BufReader::new(answers);
            let mut message = Vec::new();
            while answers.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                let parsed = serde_json::from_slice(&message).expect("a DevTools message is JSON");
                if tx.send(parsed).is_err() {
                    return;
                }
                message.clear();
            }
        });
        let mut browser = Self {
            child,
            commands,
            messages,
            next_id: 0,
            session: String::new(),
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser
    }

    /// Sends `method` (to the page once one is attached) and returns its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).expect("write to chromium");
        self.commands.flush().expect("write to chromium");
        let deadline = Instant::now() + CHROMIUM_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer from chromium to {method}: {e}"));
            // Events (no id) and answers to no one are not ours.
            if answer["id"] == id {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// Opens `url` and waits until it has loaded (the blank page before it is loaded too, so
    /// the address tells them apart).
    fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_until(
            &format!("location.href === {url:?} && document.readyState === 'complete'"),
            &format!("loading {url}"),
        );
    }

    /// The value of the JavaScript `expression` in the page.
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is true in the page; panics with the DOM after `what` never
    /// came.
    fn wait_until(&mut self, expression: &str, what: &str) {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        while self.eval(expression) != json!(true) {
            if Instant::now() > deadline {
                panic!("{what} never happened:\n{}", self.dom());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The page's refreshes so far (the script counts them on `<body>`).
    fn refreshes(&mut self) -> u64 {
        self.eval("Number(document.body.dataset.refreshes)")
            .as_u64()
            .expect("a refresh count")
    }

    /// Types `text` into the field with id `id` and presses Enter, as a person would.
    fn type_into(&mut self, id: &str, text: &str) {
        self.eval(&format!("document.getElementById({id:?}).focus()"));
        self.call("Input.insertText", json!({"text": text}));
        let enter = json!({"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13});
        let mut down = enter.clone();
        down["type"] = json!("keyDown");
        down["text"] = json!("\r");
        let mut up = enter;
        up["type"] = json!("keyUp");
        self.call("Input.dispatchKeyEvent", down);
        self.call("Input.dispatchKeyEvent", up);
    }

    /// The page as HTML now.
    fn dom(&mut self) -> String {
        self.eval("document.documentElement.outerHTML")
            .as_str()
            .expect("the page's HTML")
            .to_string()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /v1/generators` (with `token` when auth is on).
async fn status(s: &crate::support::TestServer, token: Option<&str>) -> Value {
    let mut request = s.client.get(format!("{}/v1/generators", s.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.unwrap();
    assert_eq!(r.status(), 200, "/v1/generators");
    r.json().await.unwrap()
}

/// The status entry of `tag`'s segment buffer.
async fn buffer(s: &crate::support::TestServer, tag: &str, token: Option<&str>) -> Value {
    let status = status(s, token).await;
    status["segment_buffers"]
        .as_array()
        .expect("segment_buffers")
        .iter()
        .find(|b| b["tag"] == tag)
        .unwrap_or_else(|| panic!("no buffer for {tag}: {status}"))
        .clone()
}

/// `tag`'s buffer once its background refill has settled: two reads a second apart agree.
async fn settled_buffer(s: &crate::support::TestServer, tag: &str, token: Option<&str>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = buffer(s, tag, token).await;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = buffer(s, tag, token).await;
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

/// The page's DOM from `show` (which runs Chromium), and `tag`'s buffer as the server
/// reported it throughout. Nothing issues IDs while the page loads, so only a background
/// refill can change the buffer; `show` runs again if one landed meanwhile.
async fn dom_with_steady_buffer(
    s: &crate::support::TestServer,
    tag: &str,
    token: Option<&str>,
    show: impl Fn() -> String + Clone + Send + 'static,
) -> (String, Value) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = settled_buffer(s, tag, token).await;
        let dom = tokio::task::spawn_blocking(show.clone())
            .await
            .expect("chromium thread");
        let after = buffer(s, tag, token).await;
        if before == after {
            return (dom, after);
        }
        assert!(attempt < 3, "the buffer of {tag} kept changing: {after}");
    }
}

/// What the page must show for a server whose status is `status`: every generator with its
/// kind, layout, readiness and lease, and `tag`'s buffer exactly as `expected` after 7 IDs
/// of a step of 100.
fn assert_real_values(dom: &str, status: &Value, tag: &str, expected: &Value) {
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
        let r = row(dom, &format!("data-generator=\"{name}\""));
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
            let section = block(dom, &format!("data-section=\"{name}.{key}\""));
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
    let snowflake = row(dom, "data-generator=\"snowflake\"");
    assert_eq!(field(snowflake, "layout"), "twitter");
    assert!(
        field(snowflake, "rate").parse::<f64>().is_ok(),
        "a rate, not a dash: {snowflake}"
    );

    // The tag's buffer: exactly what the server reports.
    let r = row(dom, &format!("data-tag=\"{tag}\""));
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

    // The charts are drawn, and the tag's buffer chart ends at the values the table shows.
    for id in ["ids-rate", "latency", "lease-left", "clock-offset"] {
        chart(dom, id, None);
    }
    let buffer = chart(dom, "segment-buffer", Some(tag));
    for (name, key) in [
        ("left", "current_left"),
        ("size", "current_len"),
        ("ahead", "ids_ahead"),
    ] {
        let l = assert_drawn(buffer, name, 2, false);
        assert_eq!(
            l.last.to_string(),
            expected[key].to_string(),
            "{name}: {l:?}"
        );
    }
    assert_eq!(
        attr(buffer, "data-refills"),
        "0",
        "nothing was issued meanwhile: {buffer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_real_values_in_headless_chromium() {
    let s = crate::support::start("snowdrift-ui", "").await;
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

    let status = status(&s, None).await;
    let profile = s.dir.join("chromium-profile");
    let url = format!("{}/ui", s.base);
    let (dom, expected) =
        dom_with_steady_buffer(&s, &tag, None, move || dump_dom(&url, &profile)).await;
    assert_real_values(&dom, &status, &tag, &expected);
    let snowflake = row(&dom, "data-generator=\"snowflake\"");
    assert_eq!(digits(field(snowflake, "issued")), "5", "{snowflake}");
    // With auth off the page never asks for a token.
    assert!(
        dom.contains(r#"id="token-form" class="token" hidden"#),
        "the token field shows with auth off:\n{dom}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_on_the_dashboard_asks_for_a_token_and_shows_real_values_with_it() {
    let (root, reader, narrow) = (
        generate_token().unwrap(),
        generate_token().unwrap(),
        generate_token().unwrap(),
    );
    let token = |name: &str, secret: &str, generators: &str, role: &str| {
        format!(
            "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = {generators}\n\
             role = \"{role}\"\n",
            TokenHash::of(secret)
        )
    };
    let s = crate::support::start(
        "snowdrift-ui-auth",
        &[
            token("root", &root, r#"["*"]"#, "admin"),
            token("dashboard", &reader, r#"["*"]"#, "read"),
            token("narrow", &narrow, r#"["snowflake"]"#, "read"),
        ]
        .concat(),
    )
    .await;
    let tag = snowdrift_testkit::unique_name("ui");
    let r = s
        .client
        .post(format!("{}/v1/tags", s.base))
        .bearer_auth(&root)
        .json(&json!({"tag": tag, "step": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = s
        .client
        .get(format!("{}/v1/ids/{tag}?count=7", s.base))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let status = status(&s, Some(&reader)).await;
    let profile = s.dir.join("chromium-profile");
    let url = format!("{}/ui", s.base);
    let (strangers, typed) = (generate_token().unwrap(), reader.clone());
    let show = move || {
        let mut page = Browser::start(&profile);
        page.navigate(&url);
        // No token yet: the page says what it needs, and shows no generator.
        page.wait_until(
            "document.body.dataset.auth === 'refused' && !document.getElementById('token-form').hidden",
            "the page asking for a token",
        );
        let message = page.eval("document.getElementById('auth-message').textContent");
        let message = message.as_str().unwrap_or_default().to_string();
        assert!(
            message.contains("needs a token") && message.contains("generators = [\"*\"]"),
            "{message}"
        );
        assert_eq!(
            page.eval("document.querySelectorAll('#generators tbody tr').length"),
            json!(0)
        );
        // A token the server does not know, then one that may not read every generator:
        // each refusal is said in words.
        for (token, says) in [
            (strangers.as_str(), "does not accept this token"),
            (narrow.as_str(), "may not read every generator"),
        ] {
            page.type_into("token", token);
            page.wait_until(
                &format!("document.getElementById('auth-message').textContent.includes({says:?})"),
                says,
            );
        }
        // The dashboard's token: real values, refreshed twice since (rates need two samples).
        page.type_into("token", &typed);
        page.wait_until(
            "document.body.dataset.auth === 'token' && \
             document.querySelectorAll('#generators tbody tr').length > 0",
            "the generators shown with the token",
        );
        let shown = page.refreshes();
        page.wait_until(
            &format!("Number(document.body.dataset.refreshes) >= {}", shown + 2),
            "two refreshes with the token",
        );
        assert_eq!(
            page.eval("sessionStorage.getItem('snowdrift.token')"),
            json!(typed),
            "the token is kept for this tab"
        );
        assert_eq!(
            page.eval("document.getElementById('token').value"),
            json!(""),
            "the field does not keep showing the token"
        );
        page.dom()
    };
    let (dom, expected) = dom_with_steady_buffer(&s, &tag, Some(&reader), show).await;
    assert_real_values(&dom, &status, &tag, &expected);
    assert!(
        dom.contains(r#"id="auth-message" class="problems" hidden"#),
        "a refusal is still shown:\n{dom}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_charts_a_server_under_load_in_headless_chromium() {
    let s = crate::support::start("snowdrift-ui-load", "").await;
    let tag = snowdrift_testkit::unique_name("ui");
    s.post(
        "/v1/tags",
        &format!(r#"{{"tag": "{tag}", "step": 100}}"#),
        201,
    )
    .await;

    // Real load for as long as the page is open: snowflake and the tag, ten IDs a request,
    // about a hundred requests a second each (a tenth of a second of the tag's step each
    // time, so it refills every tenth of a second). Slow enough to leave Chromium the CPU.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (client, base, tag, stop) =
            (s.client.clone(), s.base.clone(), tag.clone(), stop.clone());
        tokio::spawn(async move {
            let mut issued = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for name in ["snowflake", tag.as_str()] {
                    let r = client
                        .get(format!("{base}/v1/ids/{name}?count=10"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200, "{name}");
                    issued += 10;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            issued
        })
    };

    let profile = s.dir.join("chromium-profile");
    let url = format!("{}/ui", s.base);
    let dom = tokio::task::spawn_blocking(move || {
        let mut page = Browser::start(&profile);
        page.navigate(&url);
        // Five refreshes under load: four intervals to draw lines from.
        page.wait_until(
            "Number(document.body.dataset.refreshes) >= 5",
            "five refreshes",
        );
        // With auth off the token field is not just marked hidden but not shown: a style
        // that sets `display` on it must not undo the attribute.
        assert_eq!(
            page.eval("getComputedStyle(document.getElementById('token-form')).display"),
            json!("none"),
            "the token field shows with auth off"
        );
        page.dom()
    })
    .await
    .expect("chromium thread");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let issued = load.await.expect("load task");
    assert!(issued >= 200, "the load issued only {issued} IDs");

    // IDs per second: both generators under load, at more than 0 at the last refresh.
    let rate = chart(&dom, "ids-rate", None);
    for name in ["snowflake", tag.as_str()] {
        assert_drawn(rate, name, 3, true);
    }
    // Nothing asked the others: they have no line.
    assert!(!rate.contains("data-series=\"ulid\""), "{rate}");

    // Latency from the histogram's bucket deltas: the load's requests took some time, and
    // less than the largest finite bucket (2.5 s).
    let latency = chart(&dom, "latency", None);
    for q in ["p50", "p99"] {
        let l = assert_drawn(latency, q, 3, true);
        assert!(l.last < 2_500.0, "{q}: {l:?}");
    }
    assert!(
        line(latency, "p99").last >= line(latency, "p50").last,
        "{latency}"
    );

    // The tag's buffer: drawn, refilled under load, never fuller than its segment.
    let buffer = chart(&dom, "segment-buffer", Some(&tag));
    let size = assert_drawn(buffer, "size", 3, true);
    let left = assert_drawn(buffer, "left", 3, false);
    assert!(left.last <= size.last, "{left:?} {size:?}");
    assert_drawn(buffer, "ahead", 3, false);
    let refills: usize = attr(buffer, "data-refills").parse().expect("data-refills");
    assert!(refills >= 1, "no refill charted under load: {buffer}");
    // A rule for each refresh that saw refills, carrying how many; they add up.
    let counted: usize = buffer
        .split("data-marker=\"refill\" data-count=\"")
        .skip(1)
        .map(|m| {
            m[..m.find('"').expect("count closes")]
                .parse::<usize>()
                .expect("a count")
        })
        .sum();
    assert_eq!(counted, refills, "{buffer}");
    let total = settled_buffer(&s, &tag, None).await["refills"]
        .as_u64()
        .expect("refills");
    assert!(refills as u64 <= total, "{refills} charted, {total} in all");

    // The snowflake generator's lease: some of its 10 s TTL left, and a clock offset (0
    // with no peer on a file registry, but charted).
    let lease = assert_drawn(chart(&dom, "lease-left", None), "snowflake", 3, true);
    assert!(lease.last <= 10.0, "{lease:?}");
    assert_drawn(chart(&dom, "clock-offset", None), "snowflake", 3, false);

    // The legend names each line with its latest value and unit.
    let legend = block(&dom, "data-figure=\"ids-rate\"");
    assert!(
        legend.contains(&format!("data-series=\"{tag}\"")),
        "{legend}"
    );
    assert!(legend.contains(" IDs/s</span>"), "{legend}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_is_self_contained() {
    let s = crate::support::start("snowdrift-ui-assets", "").await;
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
        // The SVG namespace is a name that looks like an address; nothing fetches it.
        let body = r
            .text()
            .await
            .unwrap()
            .replace("\"http://www.w3.org/2000/svg\"", "");
        assert!(
            !body.contains("http://") && !body.contains("https://") && !body.contains("//cdn"),
            "{path} refers to another origin"
        );
    }
}
