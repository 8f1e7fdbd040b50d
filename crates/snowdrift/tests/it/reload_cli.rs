//! `snowdrift serve` reloads its tokens on SIGHUP, as an operator does it: edit the config
//! file, `kill -HUP`, and the change holds without a restart; a broken file keeps the tokens
//! in force, and a change to another section is logged as needing a restart.

use std::path::{Path, PathBuf};

use crate::common::Served;
use snowdrift_server::auth::{TokenHash, generate_token};

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn token(name: &str, secret: &str) -> String {
    format!(
        "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = [\"*\"]\nrole = \"read\"\n",
        TokenHash::of(secret)
    )
}

/// Writes the config file as an editor would: the whole file anew.
fn write(config: &Path, text: &str) {
    std::fs::write(config, text).unwrap();
}

/// The status of `GET /v1/ids/snowflake` with `token`.
fn status(served: &Served, token: &str) -> u16 {
    served.get("/v1/ids/snowflake", Some(token)).0
}

/// Sends SIGHUP and waits for the log line of that reload that contains `needle`.
fn hangup(served: &Served, needle: &str) -> String {
    let from = served.log_len();
    served.signal("HUP");
    served.wait_for_log(from, needle)
}

#[test]
fn sighup_puts_edited_tokens_in_force_and_a_broken_file_keeps_them() {
    let dir =
        TempDir(std::env::temp_dir().join(snowdrift_testkit::unique_name("snowdrift-reload")));
    std::fs::create_dir_all(&dir.0).unwrap();
    let config = dir.0.join("snowdrift.toml");
    let base = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"sqlite://{}\"\n",
        dir.0.join("ids.db").display()
    );
    let (first, second) = (generate_token().unwrap(), generate_token().unwrap());
    write(&config, &format!("{base}{}", token("first", &first)));
    let mut cmd = crate::common::serve_command();
    cmd.arg("--config").arg(&config).current_dir(&dir.0);
    let mut served = Served::start(cmd);
    assert_eq!(status(&served, &first), 200);
    assert_eq!(status(&served, &second), 401);

    // A token added to the file.
    write(
        &config,
        &format!(
            "{base}{}{}",
            token("first", &first),
            token("second", &second)
        ),
    );
    let line = hangup(&served, "config reloaded");
    assert!(line.contains("added: second"), "{line}");
    assert_eq!(status(&served, &second), 200);
    assert_eq!(status(&served, &first), 200);

    // A token removed from the file.
    write(&config, &format!("{base}{}", token("second", &second)));
    let line = hangup(&served, "config reloaded");
    assert!(line.contains("removed: first"), "{line}");
    assert_eq!(status(&served, &first), 401);
    assert_eq!(status(&served, &second), 200);

    // A broken file: logged, and the tokens in force stay.
    write(
        &config,
        &format!("{base}{}[[auth.token\n", token("second", &second)),
    );
    let line = hangup(&served, "config reload failed");
    assert!(line.contains("the tokens in force stay"), "{line}");
    assert!(served.is_running(), "a broken file never stops the server");
    assert_eq!(status(&served, &second), 200);
    assert_eq!(status(&served, &first), 401);
    assert_eq!(served.get("/v1/ids/snowflake", None).0, 401);

    // Another section changed: logged as needing a restart, not applied; the tokens are.
    write(
        &config,
        &format!("{base}[limits]\nmax_count = 1\n{}", token("first", &first)),
    );
    let line = hangup(&served, "need a restart");
    assert!(line.contains("[limits]"), "{line}");
    assert_eq!(status(&served, &first), 200);
    assert_eq!(status(&served, &second), 401);
    let (code, body) = served.get("/v1/ids/snowflake?count=2", Some(&first));
    assert_eq!(code, 200, "the running max_count still applies: {body}");

    let exit = served.stop();
    assert!(exit.success(), "{exit}");
}
