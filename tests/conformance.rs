//! R-Q5, conformance rule by rule: the host-side rules of SEP-2640 that no other test file proved
//! (each test is named for its rule, and `docs/conformance.md` names it in the rule's row), and
//! the check that every test the document names exists (`scripts/conformance-check.py`), shown to
//! fail on a row whose test is missing.
//!
//! The wire-level rules use a scripted stdio server (Python, no dependencies) written for these
//! tests: it speaks the `initialize` handshake, declares the skills extension *without*
//! `directoryRead`, calls itself `docs-server` in `serverInfo`, and logs every method it gets.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::double::Double;
use serde_json::json;
use skillcache::entry::Validation;
use skillcache::error::Declined;
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Error, Origin, SkillCache, SkillEntry, SkillUri, Verification};

const DEADLINE: Duration = Duration::from_secs(60);

/// argv: LOG. One skill, `skill://docs/guide/SKILL.md`, whose body points at a folder.
const SCRIPTED_SERVER: &str = r##"
import hashlib, json, sys
log = open(sys.argv[1], "a")
root = "skill://docs/guide"
files = {root + "/SKILL.md": b"---\nname: guide\ndescription: A guide.\n---\nPick a template from templates/.\n",
         root + "/templates/a.md": b"# A\n"}
def res(u, b): return {"uri": u, "size": len(b), "digest": "sha256:" + hashlib.sha256(b).hexdigest()}
entry = {"uri": root + "/SKILL.md", "frontmatter": {"name": "guide", "description": "A guide."},
         "resources": [res(u, b) for u, b in files.items()]}
hints = {"ttlMs": 0, "cacheScope": "public", "resultType": "complete"}
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
    if method == "initialize":
        reply(msg, {"protocolVersion": "2025-11-25",
                    "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
                    "serverInfo": {"name": "docs-server", "version": "1"}})
    elif method == "skills/list":
        reply(msg, dict(skills=[entry], **hints))
    elif method == "skills/get":
        reply(msg, dict(skill=entry, **hints))
    elif method == "resources/read":
        u = msg["params"]["uri"]
        reply(msg, dict(contents=[{"uri": u, "text": files[u].decode()}], **hints))
    else:
        reply(msg, error={"code": -32601, "message": "Method not found"})
"##;

struct Scripted {
    dir: common::Scratch,
}

impl Scripted {
    fn new() -> Scripted {
        let dir = common::scratch();
        std::fs::write(dir.path().join("server.py"), SCRIPTED_SERVER).expect("write server");
        Scripted { dir }
    }

    fn source(&self) -> McpSource {
        let mut command = tokio::process::Command::new("python3");
        command
            .arg(self.dir.path().join("server.py"))
            .arg(self.dir.path().join("methods.log"));
        McpSource::stdio(command)
    }

    fn methods(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("methods.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn cache(&self, approval: ApprovalPolicy) -> SkillCache {
        SkillCache::builder()
            .root(self.dir.path().join("root"))
            .key_file(self.dir.path().join("host.key"))
            .approval(approval)
            .open()
            .expect("open")
    }
}

/// Capability Negotiation: clients MUST NOT call `resources/directory/read` against a server that
/// has not declared `directoryRead: true`. skillcache never sends it at all: the held entry's
/// manifest answers what a folder holds.
#[tokio::test]
async fn cap_resources_directory_read_is_never_sent() {
    let server = Scripted::new();
    let cache = server.cache(ApprovalPolicy::NotRequired);
    let origin = Origin::new("docs").expect("label");
    cache.connect(origin.clone(), Arc::new(server.source()));
    let work = async {
        let listed = cache.list(&origin).await.expect("list");
        let entry = listed[0].as_ref().expect("valid").entry.clone();
        let (skill, files) = cache.load_all(&origin, &entry).await.expect("load all");
        assert_eq!(files.len(), 2);
        // The body says "pick from templates/": what it holds comes from the held entry.
        let templates: Vec<&str> = skill
            .files()
            .iter()
            .map(|f| f.uri().as_str())
            .filter(|u| u.starts_with("skill://docs/guide/templates/"))
            .collect();
        assert_eq!(templates, ["skill://docs/guide/templates/a.md"]);
        assert!(
            skill.read("templates").await.is_err(),
            "a folder is not a file of the skill"
        );
    };
    tokio::time::timeout(DEADLINE, work)
        .await
        .expect("within the deadline");
    let methods = server.methods();
    assert!(methods.iter().any(|m| m == "resources/read"), "{methods:?}");
    assert!(
        !methods.iter().any(|m| m == "resources/directory/read"),
        "{methods:?}"
    );
}

/// Security Considerations, origin-scoped reads: hosts MUST identify servers by a host-assigned
/// label, not the server's self-reported `serverInfo.name`.
#[tokio::test]
async fn sec_a_server_is_known_by_the_host_label_never_its_server_info_name() {
    let server = Scripted::new();
    let cache = server.cache(ApprovalPolicy::NotRequired);
    let origin = Origin::new("untrusted-upload").expect("label");
    cache.connect(origin.clone(), Arc::new(server.source()));
    let uri = SkillUri::parse("skill://docs/guide/SKILL.md").expect("uri");
    let work = async {
        let entry = cache.entry(&origin, &uri).await.expect("entry").entry;
        cache.load_all(&origin, &entry).await.expect("load all")
    };
    let (skill, files) = tokio::time::timeout(DEADLINE, work)
        .await
        .expect("within the deadline");
    assert_eq!(skill.origin(), &origin);
    for f in &files {
        assert_eq!(f.origin(), &origin);
        assert!(f.framed().contains("origin=\"untrusted-upload\""));
        assert!(!f.framed().contains("docs-server"));
    }
    let held = cache.cached_entries(None).await.expect("entries");
    assert_eq!(
        held.iter().map(|e| e.origin.as_str()).collect::<Vec<_>>(),
        ["untrusted-upload"]
    );
}

/// Frontmatter: keys of `metadata` under the reserved `io.modelcontextprotocol/` prefix that an
/// implementation does not recognise SHOULD be ignored — accepted, passed through, acted on by
/// nothing — in the default and the strict validation alike.
#[tokio::test]
async fn fm_unknown_reserved_metadata_keys_are_ignored() {
    let md = b"---\nname: notes\ndescription: Notes.\nmetadata:\n  io.modelcontextprotocol/unknown-future-key: \"anything\"\n  version: \"1\"\n---\n# Notes\n";
    let wire = json!({
        "uri": "skill://notes/SKILL.md",
        "frontmatter": {"name": "notes", "description": "Notes.",
                        "metadata": {"io.modelcontextprotocol/unknown-future-key": "anything", "version": "1"}},
        "resources": [{"uri": "skill://notes/SKILL.md", "digest": skillcache::Digest::of(md).to_string(), "size": md.len()}],
    });
    for strict in [false, true] {
        let entry = SkillEntry::from_json(&wire, &Validation::default().strict(strict))
            .expect("the reserved key does not make the entry invalid");
        assert_eq!(
            entry.frontmatter()["metadata"]["io.modelcontextprotocol/unknown-future-key"],
            "anything",
            "passed through unchanged"
        );
    }
    let dir = common::scratch();
    let double = Arc::new(Double::new());
    double.publish_json("skill://notes/SKILL.md", wire);
    double.serve_bytes("skill://notes/SKILL.md", md);
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    let origin = Origin::new("docs").expect("label");
    cache.connect(origin.clone(), double);
    let uri = SkillUri::parse("skill://notes/SKILL.md").expect("uri");
    let entry = cache.entry(&origin, &uri).await.expect("entry").entry;
    let skill = cache.load(&origin, &entry).await.expect("loads");
    assert_eq!(skill.skill_md().bytes(), md);
}

/// Listing Skills: hosts MUST NOT treat an empty or partial listing as proof that a server has no
/// skills, and MUST support loading a skill given only its URI (`skills/get`).
#[tokio::test]
async fn list_a_skill_missing_from_the_listing_loads_by_its_uri_alone() {
    let dir = common::scratch();
    let double = Arc::new(Double::new());
    let (entry, files) = common::skill("unlisted", &[("a.md", b"A")]);
    // The listing is empty; `skills/get` still answers for the skill.
    double.answer_get_with(entry.to_json());
    for (uri, bytes) in &files {
        double.serve_bytes(uri, bytes);
    }
    let cache = SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    let origin = Origin::new("docs").expect("label");
    cache.connect(origin.clone(), double);
    assert!(cache.list(&origin).await.expect("list").is_empty());
    let held = cache
        .entry(&origin, entry.uri())
        .await
        .expect("by URI")
        .entry;
    let skill = cache.load(&origin, &held).await.expect("loads");
    assert_eq!(skill.read("a.md").await.expect("read").bytes(), b"A");
}

/// Cache isolation and durable origin: content loaded from the cache MUST be treated as having
/// arrived over MCP for all purposes, after a host restart and with the server disconnected: it
/// carries its origin, frames as MCP content, stays behind the approval gate, and its requested
/// tools stay requests.
#[tokio::test]
async fn sec_cached_content_stays_mcp_content_after_a_restart_and_with_no_server() {
    let dir = common::scratch();
    let origin = Origin::new("docs").expect("label");
    let md = b"---\nname: ops\ndescription: Ops.\nallowed-tools: Bash\n---\nRun scripts/x.sh.\n"
        .to_vec();
    let wire = json!({
        "uri": "skill://ops/SKILL.md",
        "frontmatter": {"name": "ops", "description": "Ops.", "allowed-tools": "Bash"},
        "resources": [{"uri": "skill://ops/SKILL.md", "digest": skillcache::Digest::of(&md).to_string(), "size": md.len()}],
    });
    let open = |offline: bool| {
        SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .offline(offline)
            .allow_stale(true)
            .open()
            .expect("open")
    };
    {
        let cache = open(false);
        let double = Arc::new(Double::new());
        double.publish_json("skill://ops/SKILL.md", wire);
        double.serve_bytes("skill://ops/SKILL.md", &md);
        cache.connect(origin.clone(), double);
        let uri = SkillUri::parse("skill://ops/SKILL.md").expect("uri");
        let entry = cache.entry(&origin, &uri).await.expect("entry").entry;
        cache.approve(&origin, &entry, None).await.expect("approve");
        cache
            .load(&origin, &entry)
            .await
            .expect("loads once online");
    }
    // A new process, no source bound at all: everything comes from the cache.
    let cache = open(true);
    let uri = SkillUri::parse("skill://ops/SKILL.md").expect("uri");
    let entry = cache
        .entry(&origin, &uri)
        .await
        .expect("cached entry")
        .entry;
    let skill = cache
        .load(&origin, &entry)
        .await
        .expect("loads from the cache");
    let file = skill.skill_md();
    assert_eq!(file.origin(), &origin);
    assert!(matches!(file.verification(), Verification::Verified(_)));
    let framed = file.framed();
    let open = framed.lines().next().expect("an opening line");
    assert!(open.starts_with("<mcp-skill-file boundary=\""), "{open}");
    assert!(
        open.contains(" from=\"MCP server\" origin=\"docs\" "),
        "{open}"
    );
    assert_eq!(skill.granted_tools(), None, "the request is not a grant");
    assert_eq!(entry.requested_tools(), Some(&json!("Bash")));
    // Another principal has not approved it: the gate holds for cached bytes too.
    let other = cache.for_principal("bob").expect("a visible principal");
    match other.load(&origin, &entry).await {
        Err(Error::Declined {
            reason: Declined::NotApproved,
            ..
        }) => {}
        Err(e) => panic!("expected a decline, got {e}"),
        Ok(_) => panic!("loaded without bob's approval"),
    }
}

// ---- the document's own check (R-Q5) -----------------------------------------------------

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check(doc: &Path) -> std::process::Output {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("scripts/conformance-check.py"))
        .arg("--doc")
        .arg(doc);
    common::within(DEADLINE, move || cmd.output().expect("python3 runs"))
        .expect("the check ends within the deadline")
}

#[test]
fn q5_every_test_the_conformance_document_names_exists() {
    let out = check(&repo().join("docs/conformance.md"));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("rules") && said.contains("every named test exists"),
        "{said}"
    );
}

#[test]
fn q5_the_check_fails_naming_a_row_whose_test_does_not_exist() {
    let doc = std::fs::read_to_string(repo().join("docs/conformance.md")).expect("read doc");
    let real = "tests/conformance.rs::cap_resources_directory_read_is_never_sent";
    assert!(doc.contains(real), "the document names {real}");
    let dir = common::scratch();
    // A test renamed away (or never written), and a test file that does not exist.
    for bogus in [
        "tests/conformance.rs::cap_resources_directory_read_is_never_sent_at_all",
        "tests/no_such_file.rs::cap_resources_directory_read_is_never_sent",
    ] {
        let copy = dir.path().join("conformance.md");
        std::fs::write(&copy, doc.replacen(real, bogus, 1)).expect("write copy");
        let out = check(&copy);
        assert_eq!(out.status.code(), Some(1), "{bogus}");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains(bogus), "the missing test is named: {said}");
    }
    // A row that names no test at all fails too.
    let copy = dir.path().join("conformance.md");
    std::fs::write(&copy, doc.replacen(&format!("`{real}`"), "(none)", 1)).expect("write copy");
    let out = check(&copy);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("names no test"));
}
