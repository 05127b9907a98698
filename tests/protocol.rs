//! The MCP lifecycle the client negotiates (issue 13, item 0): protocol 2026-07-28 through
//! `server/discover` first, the `initialize` handshake (2025-11-25) for a server that refuses
//! it, and the negotiated revision reported by `McpSource::protocol_version` and in the CLI's
//! `--json` output.
//!
//! The peer is a scripted stdio server (Python, no dependencies) written for these tests, so
//! what it checks does not depend on our own `serve`: it logs every method it receives, refuses
//! a skills request that lacks the 2026-07-28 per-request metadata once discovery happened, and
//! in each mode fails the way its name says.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use skillcache::source::{McpSource, SkillSource};
use skillcache::{ApprovalPolicy, Error, Origin, SkillCache};

/// argv: MODE LOG. Modes: `modern` (answers `server/discover`, refuses `initialize`),
/// `legacy` (refuses `server/discover` with "Method not found", answers `initialize`),
/// `modern-no-skills` (discovery declares `resources` but not the skills extension),
/// `silent-discover` (never answers `server/discover`, answers `initialize`).
const SCRIPTED_SERVER: &str = r#"
import hashlib, json, sys
mode, log = sys.argv[1], open(sys.argv[2], "a")
md = b"---\nname: hello\ndescription: Says hello.\n---\n# Hello\n"
uri = "skill://hello/SKILL.md"
entry = {"uri": uri, "frontmatter": {"name": "hello", "description": "Says hello."},
         "resources": [{"uri": uri, "size": len(md),
                        "digest": "sha256:" + hashlib.sha256(md).hexdigest()}]}
skills = {"io.modelcontextprotocol/skills": {}}
modern = False

def reply(msg, result=None, error=None):
    out = {"jsonrpc": "2.0", "id": msg["id"]}
    out.update({"error": error} if error else {"result": result})
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    log.write(method + "\n")
    log.flush()
    if "id" not in msg:
        continue
    meta = (msg.get("params") or {}).get("_meta") or {}
    hints = {"ttlMs": 600000, "cacheScope": "private", "resultType": "complete"}
    if method == "server/discover":
        if mode == "silent-discover":
            continue
        if mode == "legacy":
            reply(msg, error={"code": -32601, "message": "Method not found"})
            continue
        modern = True
        caps = {"resources": {}}
        if mode != "modern-no-skills":
            caps["extensions"] = skills
        reply(msg, dict(supportedVersions=["2026-07-28"], capabilities=caps,
                        ttlMs=0, cacheScope="private", resultType="complete"))
    elif method == "initialize":
        if mode not in ("legacy", "silent-discover"):
            reply(msg, error={"code": -32601, "message": "initialize is gone in 2026-07-28"})
            continue
        reply(msg, {"protocolVersion": "2025-11-25",
                    "capabilities": {"resources": {}, "extensions": skills},
                    "serverInfo": {"name": "scripted", "version": "1"}})
    elif modern and meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
        reply(msg, error={"code": -32602, "message": "missing per-request protocol metadata"})
    elif method == "skills/list":
        reply(msg, dict(skills=[entry], **hints))
    elif method == "skills/get":
        reply(msg, dict(skill=entry, **hints))
    elif method == "resources/read":
        reply(msg, dict(contents=[{"uri": uri, "mimeType": "text/markdown",
                                   "text": md.decode()}], **hints))
    else:
        reply(msg, error={"code": -32601, "message": "Method not found"})
"#;

struct Place {
    dir: common::Scratch,
}

impl Place {
    fn new() -> Place {
        let dir = common::scratch();
        std::fs::write(dir.path().join("server.py"), SCRIPTED_SERVER).expect("write server");
        Place { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The shell line that starts the scripted server in `mode`, logging to `log`.
    fn line(&self, mode: &str) -> String {
        format!(
            "python3 '{}' {mode} '{}'",
            self.path().join("server.py").display(),
            self.path().join("methods.log").display()
        )
    }

    fn source(&self, mode: &str) -> McpSource {
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(format!("exec {}", self.line(mode)));
        McpSource::stdio(command)
    }

    /// Every method the server received, in order.
    fn methods(&self) -> Vec<String> {
        std::fs::read_to_string(self.path().join("methods.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn cache(&self) -> SkillCache {
        SkillCache::builder()
            .root(self.path().join("root"))
            .key_file(self.path().join("key"))
            .approval(ApprovalPolicy::NotRequired)
            .open()
            .expect("open")
    }

    fn cli(&self, mode: &str, args: &[&str]) -> std::process::Output {
        Command::new(common::bin())
            .env("SKILLCACHE_ROOT", self.path().join("root"))
            .env("SKILLCACHE_KEY_FILE", self.path().join("key"))
            .args(args)
            .args([
                "--json",
                "--origin",
                "scripted",
                "--stdio",
                &self.line(mode),
            ])
            .output()
            .expect("run skillcache")
    }
}

/// Loads the one skill and reads its `SKILL.md`; the revision the source negotiated.
async fn load_hello(place: &Place, source: McpSource) -> Result<Option<String>, Error> {
    let source = Arc::new(source);
    let cache = place.cache();
    let origin = Origin::new("scripted").expect("label");
    cache.connect(origin.clone(), Arc::clone(&source) as Arc<dyn SkillSource>);
    let listed = cache.list(&origin).await?;
    let info = listed
        .into_iter()
        .next()
        .expect("one skill listed")
        .expect("a valid entry");
    let skill = cache.load(&origin, &info.entry).await?;
    assert!(matches!(
        skill.skill_md().verification(),
        skillcache::Verification::Verified(_)
    ));
    assert_eq!(
        skill.skill_md().bytes(),
        b"---\nname: hello\ndescription: Says hello.\n---\n# Hello\n"
    );
    Ok(source.protocol_version().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_is_preferred_and_every_skills_request_carries_the_2026_07_28_metadata() {
    let place = Place::new();
    let source = place.source("modern");
    assert_eq!(
        source.protocol_version(),
        None,
        "nothing negotiated before the first request"
    );
    let revision = load_hello(&place, source)
        .await
        .expect("loads over 2026-07-28");
    assert_eq!(revision.as_deref(), Some("2026-07-28"));
    let methods = place.methods();
    assert_eq!(methods.first().map(String::as_str), Some("server/discover"));
    assert!(
        !methods.iter().any(|m| m == "initialize"),
        "no handshake once discovery worked: {methods:?}"
    );
    // The server refuses a skills request without the per-request metadata: these succeeded.
    assert!(methods.iter().any(|m| m == "resources/read"), "{methods:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_refuses_discover_gets_the_initialize_handshake_and_reports_2025_11_25() {
    let place = Place::new();
    let revision = load_hello(&place, place.source("legacy"))
        .await
        .expect("loads over the handshake");
    assert_eq!(revision.as_deref(), Some("2025-11-25"));
    let methods = place.methods();
    assert_eq!(
        methods.get(..3).map(<[String]>::to_vec),
        Some(vec![
            "server/discover".to_owned(),
            "initialize".to_owned(),
            "notifications/initialized".to_owned()
        ]),
        "discover first, then the handshake on the same connection"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_ignores_discover_gets_the_handshake_after_the_probe_and_loads() {
    // rmcp gives up on an unanswered `server/discover` after its 10 s probe; the default connect
    // deadline (30 s) leaves room for the handshake that follows.
    let place = Place::new();
    let revision = load_hello(&place, place.source("silent-discover"))
        .await
        .expect("loads over the handshake");
    assert_eq!(revision.as_deref(), Some("2025-11-25"));
    let methods = place.methods();
    assert_eq!(
        methods.get(..2).map(<[String]>::to_vec),
        Some(vec!["server/discover".to_owned(), "initialize".to_owned()]),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_discovery_without_the_skills_extension_is_refused_naming_server_discover() {
    let place = Place::new();
    let err = load_hello(&place, place.source("modern-no-skills"))
        .await
        .expect_err("no skills extension, no skills calls");
    let text = err.to_string();
    assert!(
        text.contains("server/discover") && text.contains("io.modelcontextprotocol/skills"),
        "the error names the lifecycle step and what is missing: {text}"
    );
    assert!(
        !place.methods().iter().any(|m| m.starts_with("skills/")),
        "no skills request went out: {:?}",
        place.methods()
    );
}

#[test]
fn cli_json_reports_the_negotiated_revision_and_null_when_the_server_was_not_contacted() {
    let place = Place::new();
    let json = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON on stdout")
    };
    let listed = json(&place.cli("modern", &["list"]));
    assert_eq!(listed["protocol_version"], "2026-07-28");
    assert_eq!(listed["skills"][0]["uri"], "skill://hello/SKILL.md");

    // Another root: a server that only speaks the handshake.
    let legacy = Place::new();
    let entry = json(&legacy.cli("legacy", &["entry", "skill://hello/SKILL.md"]));
    assert_eq!(entry["protocol_version"], "2025-11-25");
    assert_eq!(entry["from_cache"], false);

    // Cold load contacts the server; warm load of a fresh entry (ttlMs 600000) never does
    // (R-B4), so there is no revision to report.
    let cold = json(&place.cli("modern", &["load", "skill://hello/SKILL.md"]));
    assert_eq!(cold["verified"], true);
    assert_eq!(cold["protocol_version"], "2026-07-28");
    let before = place.methods().len();
    let warm = json(&place.cli("modern", &["load", "skill://hello/SKILL.md"]));
    assert_eq!(warm["verified"], true);
    assert_eq!(warm["source"], "cache");
    assert_eq!(warm["protocol_version"], serde_json::Value::Null);
    assert_eq!(
        place.methods().len(),
        before,
        "the warm load contacted no server"
    );
}
