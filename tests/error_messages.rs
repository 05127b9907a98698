//! Errors a newcomer meets first say what is wrong and name the origin (D5): a refused origin
//! label says what a label must be and names the label, display-safe; an unknown skill names the
//! origin it was asked of, in the library and in the CLI; host files still quote nothing (R-E4).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::double::Double;
use skillcache::error::SourceError;
use skillcache::local::SkillServer;
use skillcache::{ApprovalPolicy, Error, Origin, SkillCache, SkillUri};

#[test]
fn d5_an_empty_origin_label_says_what_a_label_must_be() {
    let why = Origin::new("").expect_err("refused").to_string();
    assert_eq!(
        why,
        "origin label \"\" refused: an origin label (the host's name for a server) must be 1 to \
         80 bytes, every character visible; this one is empty"
    );
}

#[test]
fn d5_a_refused_origin_label_is_named_display_safe_and_cut() {
    let why = Origin::new("team\u{200B}")
        .expect_err("refused")
        .to_string();
    assert!(
        why.starts_with(r#"origin label "team\u{200B}" refused: "#) && !why.contains('\u{200B}'),
        "{why}"
    );
    assert!(why.contains("this one contains U+200B"), "{why}");
    // A 300-byte label is named by its first 40 characters, never quoted whole.
    let why = Origin::new("x".repeat(300))
        .expect_err("refused")
        .to_string();
    assert!(
        why.starts_with(&format!("origin label \"{}…\" refused: ", "x".repeat(40)))
            && why.ends_with("this one is 300 bytes long")
            && !why.contains(&"x".repeat(41)),
        "{why}"
    );
}

#[test]
fn d5_a_host_file_refusing_an_origin_says_what_is_wrong_without_quoting_it() {
    // R-E4: a lock file's refusal quotes nothing of the file, the label included.
    let dir = common::scratch();
    let lock = dir.path().join("skills.lock");
    std::fs::write(
        &lock,
        "version = 1\n[[skill]]\norigin = \"team\\u200B\"\nuri = \"skill://a/SKILL.md\"\n",
    )
    .expect("write");
    let why = skillcache::LockFile::read(&lock)
        .expect_err("refused")
        .to_string();
    assert!(
        why.contains("skill[0].origin")
            && why.contains("an origin label (the host's name for a server) must be 1 to 80 bytes")
            && why.contains("this one contains U+200B")
            && !why.contains("team"),
        "{why}"
    );
    // An MCP config whose server is named "": the name is the key path; the problem is words.
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {"": {"command": "x"}}}"#).expect("write");
    let why = skillcache::McpConfig::read(&config)
        .expect_err("refused")
        .to_string();
    assert!(
        why.contains("the name is not a usable origin: an origin label")
            && why.ends_with("this one is empty")
            && !why.contains("origin label \""),
        "{why}"
    );
}

fn one_skill(dir: &std::path::Path) -> std::path::PathBuf {
    let skills = dir.join("skills");
    std::fs::create_dir_all(skills.join("notes")).expect("mkdir");
    std::fs::write(
        skills.join("notes/SKILL.md"),
        "---\nname: notes\ndescription: Takes notes.\n---\nBody.\n",
    )
    .expect("write");
    skills
}

#[tokio::test]
async fn d5_an_unknown_skill_names_its_origin() {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("cache"))
        .key_file(dir.path().join("host.key"))
        .open()
        .expect("open");
    let origin = Origin::new("docs").expect("label");
    cache.connect(
        origin.clone(),
        Arc::new(SkillServer::new(one_skill(dir.path()))),
    );
    let unknown = SkillUri::parse("skill://nope/SKILL.md").expect("uri");
    let e = tokio::time::timeout(Duration::from_secs(30), cache.entry(&origin, &unknown))
        .await
        .expect("answered in time")
        .expect_err("no such skill");
    match &e {
        Error::Source(SourceError::Server {
            origin: Some(named),
            method,
            uri: Some(uri),
            code: -32602,
            ..
        }) => assert_eq!(
            (named, method.as_str(), uri.as_str()),
            (&origin, "skills/get", "skill://nope/SKILL.md")
        ),
        other => panic!("expected the server's refusal naming its origin: {other:?}"),
    }
    let why = e.to_string();
    assert!(
        why.starts_with(
            "skills/get of skill://nope/SKILL.md to origin docs failed on the server: "
        ),
        "{why}"
    );
}

/// A cache over `double` as origin `docs`.
fn over(dir: &std::path::Path, double: Arc<Double>) -> (SkillCache, Origin) {
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(dir.join("cache"))
        .key_file(dir.join("host.key"))
        .open()
        .expect("open");
    let origin = Origin::new("docs").expect("label");
    cache.connect(origin.clone(), double);
    (cache, origin)
}

#[tokio::test]
async fn u1_a_refused_file_read_names_the_file_it_asked_for() {
    // The server lists a.md but refuses to serve it: the error is about that file, by name,
    // whatever the server's own words say.
    let dir = common::scratch();
    let (entry, files) = common::skill("notes", &[("a.md", b"listed, never served")]);
    let double = Arc::new(Double::new());
    double.publish_json(entry.uri().as_str(), entry.to_json());
    let md = &files[0];
    assert!(md.0.ends_with("SKILL.md"));
    double.serve_bytes(&md.0, &md.1);
    let (cache, origin) = over(dir.path(), double);
    let skill = cache
        .load(&origin, &entry)
        .await
        .expect("SKILL.md is served");
    let e = skill.read("a.md").await.expect_err("a.md is refused");
    match &e {
        Error::Source(SourceError::Server {
            method,
            uri: Some(uri),
            ..
        }) => assert_eq!(
            (method.as_str(), uri.as_str()),
            ("resources/read", "skill://notes/a.md")
        ),
        other => panic!("expected the server's refusal of a.md: {other:?}"),
    }
    let why = e.to_string();
    assert!(
        why.starts_with(
            "resources/read of skill://notes/a.md to origin docs failed on the server: "
        ),
        "{why}"
    );
}

#[tokio::test]
async fn u1_a_refusal_of_a_very_long_uri_shows_it_cut_and_keeps_it_whole_as_data() {
    let dir = common::scratch();
    let (cache, origin) = over(dir.path(), Arc::new(Double::new()));
    // Just within the 8 KiB a URI may have (`MAX_URI_BYTES`), far over what a message shows.
    let long = format!("skill://{}/SKILL.md", "n".repeat(8 * 1024 - 20));
    let uri = SkillUri::parse(&long).expect("a long URI is still a URI");
    let e = cache
        .entry(&origin, &uri)
        .await
        .expect_err("nothing is served");
    match &e {
        Error::Source(SourceError::Server { uri: Some(u), .. }) => assert_eq!(u, &long),
        other => panic!("expected the server's refusal: {other:?}"),
    }
    let why = e.to_string();
    let shown = format!(
        "skills/get of skill://{}",
        "n".repeat(256 - "skill://".len())
    );
    assert!(
        why.starts_with(&format!(
            "{shown}… ({} more characters) to origin docs",
            long.len() - 256
        )),
        "{}",
        &why[..why.len().min(600)]
    );
    // The server's own text (which quotes the URI here) is cut too: the line stays short.
    assert!(why.len() < 2_000, "{} bytes", why.len());
}

/// The CLI run with `args`, its cache and key in `dir`, no stdin, within two minutes.
fn cli(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(common::bin());
    command
        .env("SKILLCACHE_ROOT", dir.join("cache"))
        .env("SKILLCACHE_KEY_FILE", dir.join("host.key"))
        .args(args)
        .stdin(std::process::Stdio::null());
    common::within(Duration::from_secs(120), move || command.output())
        .expect("the CLI finished within two minutes")
        .expect("the CLI ran")
}

#[test]
fn d5_the_cli_names_the_origin_of_an_unknown_skill() {
    let dir = common::scratch();
    let skills = one_skill(dir.path());
    let server = format!("{} serve {}", common::bin().display(), skills.display());
    let out = cli(
        dir.path(),
        &[
            "load",
            "--origin",
            "docs",
            "--stdio",
            &server,
            "skill://nope/SKILL.md",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains(
            "skillcache: error: skills/get of skill://nope/SKILL.md to origin docs failed on the server: "
        ),
        "{stderr}"
    );
}

#[test]
fn u1_the_cli_names_a_stdio_server_that_exits_with_its_last_stderr_line() {
    let dir = common::scratch();
    let out = cli(
        dir.path(),
        &[
            "list",
            "--origin",
            "docs",
            "--stdio",
            "sh -c 'echo starting >&2; echo \"cannot read /srv/skills: no such folder\" >&2; exit 3'",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    // The server's stderr is passed on as it was written, and the error names its last line.
    assert!(stderr.starts_with("starting\n"), "{stderr}");
    assert!(
        stderr.contains(
            "the server exited before answering (exit status 3); its last stderr line: cannot read /srv/skills: no such folder"
        ),
        "{stderr}"
    );
}

#[test]
fn u2_a_failed_command_with_json_prints_its_errors_as_one_json_value() {
    let dir = common::scratch();
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let out = cli(
        dir.path(),
        &["list", "--origin", "docs", "--json", "--url", &url],
    );
    assert_eq!(out.status.code(), Some(4));
    let value: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("one JSON value on stdout");
    assert_eq!(value["exit"], 4, "{value}");
    let said = value["errors"][0].as_str().expect("the error's line");
    assert!(
        said.ends_with(&format!("cannot connect to {url}: connection refused")),
        "{said}"
    );
    // The same line on stderr, for a person.
    assert!(String::from_utf8_lossy(&out.stderr).contains(said));
}

// --- U1: a failed connection is said in the words of what failed --------------------------------

/// What no message a person reads may hold: a Rust type path, rmcp's internal steps, `Debug`
/// wrapping.
const UNREADABLE: &[&str] = &[
    "rmcp::",
    "reqwest::",
    "skillcache::",
    "hyper",
    "Send message error",
    "when send",
    "discover request",
    "discover response",
    "send_request",
    "Transport [",
    "Some(",
    "ErrorData",
];

/// `e` and its cause chain, joined as the CLI and the bindings show them.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

fn assert_readable(what: &str, message: &str) {
    for bad in UNREADABLE {
        assert!(
            !message.contains(bad),
            "{what}: {bad:?} in the message a person reads: {message}"
        );
    }
}

/// The error of a listing through `source`, bound as origin `x`.
async fn listing_error(source: skillcache::source::McpSource) -> Error {
    let dir = common::scratch();
    let cache = SkillCache::builder()
        .root(dir.path().join("cache"))
        .key_file(dir.path().join("host.key"))
        .connect_timeout(Duration::from_secs(20))
        .open()
        .expect("open");
    let origin = Origin::new("x").expect("label");
    cache.connect(origin.clone(), Arc::new(source));
    tokio::time::timeout(Duration::from_secs(60), cache.list(&origin))
        .await
        .expect("answered in time")
        .expect_err("the connection fails")
}

/// A loopback port nothing listens on: bound, then closed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// A loopback HTTP server that answers every request with `status` and an HTML body, once per
/// connection, until the test ends.
fn http_answering(status: &'static str) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 16 * 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read(&mut buf);
            let body = "<html>not mcp</html>";
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[tokio::test]
async fn u1_a_refused_http_connection_names_the_url_and_the_reason() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let e = listing_error(skillcache::source::McpSource::http(&url)).await;
    let said = chain(&e);
    assert!(
        matches!(e, Error::Source(SourceError::Transport { .. })),
        "{said}"
    );
    assert!(
        said.ends_with(&format!("cannot connect to {url}: connection refused")),
        "{said}"
    );
    assert_readable("refused", &said);
}

#[tokio::test]
async fn u1_a_child_that_exits_at_once_is_said_to_have_exited_with_its_status() {
    for (line, status) in [("echo hello", 0), ("sh -c 'exit 3'", 3), ("true", 0)] {
        let e = listing_error(skillcache::source::McpSource::stdio(common::sh(line))).await;
        let said = chain(&e);
        assert!(
            said.ends_with(&format!(
                "the server exited before answering (exit status {status})"
            )),
            "{line}: {said}"
        );
        assert_readable(line, &said);
    }
}

#[tokio::test]
async fn u1_a_child_whose_stderr_is_piped_is_named_with_its_last_stderr_line() {
    // The host piped the server's stderr: skillcache reads it, and the error says what the
    // server last said there (display-safe: the escape is shown, never sent to a terminal).
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(r"printf 'starting\n' >&2; printf 'fatal: no skills folder \033[31m/srv/skills\n\n' >&2; exit 2")
        .stderr(std::process::Stdio::piped());
    let e = listing_error(skillcache::source::McpSource::stdio(command)).await;
    let said = chain(&e);
    assert!(
        said.contains(
            "the server exited before answering (exit status 2); its last stderr line: fatal: no skills folder "
        ) && said.ends_with("/srv/skills"),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "{said}");
    assert_readable("piped stderr", &said);
    // Inherited (the default), it is the host's alone: nothing of it is named.
    let e = listing_error(skillcache::source::McpSource::stdio(common::sh(
        "sh -c 'echo quiet >&2; exit 2'",
    )))
    .await;
    assert!(
        chain(&e).ends_with("the server exited before answering (exit status 2)"),
        "{}",
        chain(&e)
    );
}

#[tokio::test]
async fn u1_every_connection_failure_reads_without_types_or_internal_steps() {
    let sources = [
        (
            "no such program",
            skillcache::source::McpSource::stdio(tokio::process::Command::new(
                "/nonexistent/server",
            )),
        ),
        (
            "no such host",
            skillcache::source::McpSource::http("http://nosuchhost.invalid/mcp"),
        ),
        (
            "HTTP 404",
            skillcache::source::McpSource::http(&http_answering("404 Not Found")),
        ),
        (
            "HTTP 500",
            skillcache::source::McpSource::http(&http_answering("500 Internal Server Error")),
        ),
        (
            "HTML",
            skillcache::source::McpSource::http(&http_answering("200 OK")),
        ),
        (
            "garbage on stdout",
            skillcache::source::McpSource::stdio(common::sh("sh -c 'echo \"not json\"; sleep 1'")),
        ),
    ];
    let mut said = Vec::new();
    for (what, source) in sources {
        let e = listing_error(source).await;
        let text = chain(&e);
        assert_readable(what, &text);
        said.push(format!("{what}: {text}"));
    }
    let all = said.join("\n");
    assert!(all.contains("/nonexistent/server"), "{all}");
    assert!(all.contains("answered HTTP 404"), "{all}");
    assert!(all.contains("answered HTTP 500"), "{all}");
}

#[tokio::test]
async fn u1_a_malformed_answer_and_a_refused_entry_name_the_origin_that_sent_them() {
    // `{"skills": 5}` is no listing: the refusal says which server sent it, as a failed request
    // does, in its message and as data.
    let dir = common::scratch();
    let double = Arc::new(Double::new());
    double.set_hints(serde_json::json!({"skills": 5}));
    let (cache, origin) = over(dir.path(), double.clone());
    let e = cache.list(&origin).await.expect_err("not a listing");
    match &e {
        Error::Entry(skillcache::error::EntryError::Response {
            origin: Some(named),
            method: "skills/list",
            ..
        }) => assert_eq!(named, &origin),
        other => panic!("expected a refused response naming its origin: {other:?}"),
    }
    let why = e.to_string();
    assert!(
        why.starts_with("invalid skills/list response from origin docs: "),
        "{why}"
    );

    // One entry of a listing refused: its error names the origin too.
    double.set_hints(serde_json::json!({}));
    double.publish_json(
        "skill://bad/SKILL.md",
        serde_json::json!({"uri": "skill://bad/SKILL.md", "name": "bad"}),
    );
    let listed = cache.list(&origin).await.expect("a listing");
    let refused = listed
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("the bad entry is refused");
    match refused {
        Error::Entry(skillcache::error::EntryError::Invalid {
            origin: Some(named),
            ..
        }) => assert_eq!(named, &origin),
        other => panic!("expected an invalid entry naming its origin: {other:?}"),
    }
    assert!(
        refused
            .to_string()
            .starts_with("invalid skill entry skill://bad/SKILL.md from origin docs: "),
        "{refused}"
    );
}

#[tokio::test]
async fn u1_what_a_server_chose_is_cut_in_a_message_and_a_skill_over_the_limits_names_its_origin() {
    // A `nextCursor` of 200,000 characters, sent again on the next page: the refusal quotes it
    // cut, so the message stays a few hundred bytes whatever the server sends.
    let dir = common::scratch();
    let double = Arc::new(Double::new());
    let cursor = "c".repeat(200_000);
    double.set_hints(serde_json::json!({"nextCursor": cursor}));
    let (cache, origin) = over(dir.path(), double.clone());
    let e = cache.list(&origin).await.expect_err("paging loops");
    let why = e.to_string();
    assert!(why.len() < 1_000, "{} bytes", why.len());
    assert!(why.contains("… (199744 more characters)"), "{why}");

    // 600 files, over the 512 a skill may list: declined from its entry, naming the origin.
    double.set_hints(serde_json::json!({}));
    let resources: Vec<serde_json::Value> = (0..600)
        .map(|i| {
            serde_json::json!({
                "uri": format!("skill://big/f{i}.md"),
                "digest": format!("sha256:{}", "0".repeat(64)),
                "size": 1,
            })
        })
        .collect();
    double.publish_json(
        "skill://big/SKILL.md",
        serde_json::json!({
            "uri": "skill://big/SKILL.md",
            "frontmatter": {"name": "big", "description": "Too many files."},
            "resources": resources,
        }),
    );
    let listed = cache.list(&origin).await.expect("a listing");
    let over_limit = listed
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("the big skill is declined");
    match over_limit {
        Error::Entry(skillcache::error::EntryError::LimitExceeded {
            origin: Some(named),
            ..
        }) => assert_eq!(named, &origin),
        other => panic!("expected a limit naming its origin: {other:?}"),
    }
    assert!(
        over_limit
            .to_string()
            .starts_with("skill skill://big/SKILL.md from origin docs declined: "),
        "{over_limit}"
    );
}
