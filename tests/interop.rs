//! Interoperability with real peers written by others (issue: interop), off by default because it
//! needs the npm registry. `SKILLCACHE_INTEROP=1 cargo test --test interop -- --nocapture`; the
//! CI script turns it on. When on and the peers cannot be installed, the run fails loudly.
//!
//! - The official TypeScript SDK skills server (`@modelcontextprotocol/server` 2.4.0) over stdio
//!   on every skill folder of `shared/corpus/skills`: every skill it publishes must load through
//!   skillcache and every one of its files verify (size, digest; frontmatter for `SKILL.md`),
//!   from an empty cache and again from a warm one.
//! - The same server over Streamable HTTP (`interop/ts-http-server.mjs`), where it negotiates
//!   protocol 2026-07-28 through `server/discover`; over stdio it only speaks the `initialize`
//!   handshake (2025-11-25), so both of our lifecycles are exercised.
//! - `FastMCP` 4.1.6 (`PyPI`; `interop/requirements.txt`, installed into the git-ignored
//!   `interop/.venv`) over Streamable HTTP and stdio: it declares the skills extension only in
//!   the 2026-07-28 flow, so nothing loads unless the client discovers.
//! - The official conformance harness (`@modelcontextprotocol/conformance` 0.2.0-alpha.12): the
//!   four SEP-2640 client scenarios against `examples/conformance_client.rs` over Streamable HTTP.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use skillcache::Origin;
use skillcache::entry::Validation;
use skillcache::local::{find_skills, inspect};
use skillcache::source::{McpSource, SkillSource};

use common::peers::{
    enabled, install_fastmcp, install_peers, interop_dir, load_every_skill, run_harness,
};

const SCENARIOS: [&str; 4] = [
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
];

/// What our own reading of the corpus says is publishable (default rules): relative folders.
fn publishable_by_us(corpus: &Path) -> BTreeSet<String> {
    find_skills(corpus)
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| s.join("/"))
        .filter(|rel| {
            inspect(
                &corpus.join(rel),
                &format!("skill://{rel}"),
                &Validation::default(),
            )
            .is_ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn interop_ts_server_every_published_corpus_skill_loads_and_verifies_cold_and_warm() {
    if !enabled() {
        return;
    }
    let dir = install_peers();
    let corpus = common::corpus_skills();
    let command = format!(
        "node '{}' '{}'",
        dir.join("ts-server.mjs").display(),
        corpus.display()
    );
    let tmp = common::scratch();
    let ours = publishable_by_us(&corpus);
    let peer = Peer {
        name: "TS server 2.4.0",
        transport: "stdio",
        origin: Origin::new("ts-server").expect("label"),
    };
    let (passes, published) = every_skill_cold_and_warm(&peer, &tmp.path().join("root"), || {
        McpSource::stdio(common::sh(&command))
    })
    .await;
    assert_passes(&peer, &passes);
    // Over stdio the TS server answers `server/discover` with "Method not found": the client
    // falls back to the `initialize` handshake (issue 13, item 0).
    for pass in &passes {
        assert_eq!(
            pass.revision.as_deref(),
            Some("2025-11-25"),
            "{}",
            pass.name
        );
    }
    // Every skill the TS server publishes, skillcache's own reading of the folder accepts too;
    // the only skills we accept and it refuses are the documented non-string-metadata ones.
    assert!(
        published.is_subset(&ours),
        "TS publishes what we refuse: {:?}",
        published.difference(&ours).collect::<Vec<_>>()
    );
    let extra: Vec<&String> = ours.difference(&published).collect();
    assert_eq!(
        extra,
        ["markdown-mermaid-writing", "nano-banana-pro-openrouter"],
        "skills only skillcache accepts"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn interop_ts_server_over_streamable_http_negotiates_2026_07_28_and_every_skill_loads() {
    if !enabled() {
        return;
    }
    let dir = install_peers();
    let corpus = common::corpus_skills();
    let mut server = Command::new("node");
    server
        .arg(dir.join("ts-http-server.mjs"))
        .arg(&corpus)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut server = Running::start(server);
    let url = server.announced_url();
    let tmp = common::scratch();
    let peer = Peer {
        name: "TS server 2.4.0",
        transport: "Streamable HTTP",
        origin: Origin::new("ts-http").expect("label"),
    };
    let (passes, published) =
        every_skill_cold_and_warm(&peer, &tmp.path().join("root"), || McpSource::http(&url)).await;
    assert_passes(&peer, &passes);
    // The TS handler serves 2026-07-28 first: the modern flow is the one negotiated.
    for pass in &passes {
        assert_eq!(
            pass.revision.as_deref(),
            Some("2026-07-28"),
            "{}",
            pass.name
        );
    }
    let ours = publishable_by_us(&corpus);
    assert!(
        published.is_subset(&ours),
        "TS publishes what we refuse: {:?}",
        published.difference(&ours).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn interop_fastmcp_over_streamable_http_every_corpus_skill_loads_cold_and_warm_on_2026_07_28()
{
    if !enabled() {
        return;
    }
    let python = install_fastmcp();
    let corpus = common::corpus_skills();
    let port = free_port();
    let mut server = Command::new(python);
    server
        .arg(interop_dir().join("fastmcp-server.py"))
        .arg(&corpus)
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut server = Running::start(server);
    server.await_port(port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let tmp = common::scratch();
    let peer = Peer {
        name: "FastMCP 4.1.6",
        transport: "Streamable HTTP",
        origin: Origin::new("fastmcp-http").expect("label"),
    };
    let (passes, published) =
        every_skill_cold_and_warm(&peer, &tmp.path().join("root"), || McpSource::http(&url)).await;
    assert_fastmcp(&peer, &passes, &published, &corpus);
}

#[tokio::test(flavor = "multi_thread")]
async fn interop_fastmcp_over_stdio_every_corpus_skill_loads_cold_and_warm_on_2026_07_28() {
    if !enabled() {
        return;
    }
    let python = install_fastmcp();
    let corpus = common::corpus_skills();
    let script = interop_dir().join("fastmcp-server.py");
    let tmp = common::scratch();
    let peer = Peer {
        name: "FastMCP 4.1.6",
        transport: "stdio",
        origin: Origin::new("fastmcp-stdio").expect("label"),
    };
    let (passes, published) = every_skill_cold_and_warm(&peer, &tmp.path().join("root"), || {
        let mut command = tokio::process::Command::new(python);
        command
            .arg(&script)
            .arg(&corpus)
            .arg("stdio")
            .stderr(Stdio::null());
        McpSource::stdio(command)
    })
    .await;
    assert_fastmcp(&peer, &passes, &published, &corpus);
}

/// The one disagreement with `FastMCP` 4.1.6, a bug on its side: it cuts the frontmatter before the
/// line break that precedes the closing `---`, so a `>` or `|` block scalar that ends the
/// frontmatter loses its final line break in the entry `FastMCP` publishes. The entry then differs
/// from the `SKILL.md` it serves, and the load fails closed, as R-V6 demands. YAML (and the
/// official TS server, which publishes the same skill with the line break) keep it. One corpus
/// skill ends its frontmatter that way; any other disagreement fails the test.
const FASTMCP_KNOWN: [(&str, &str); 1] = [(
    "skill://azure-architecture-autopilot/SKILL.md",
    "frontmatter differs from the entry: description (different value)",
)];

/// `FastMCP` declares the skills extension only in the 2026-07-28 flow (`server/discover`): that
/// the skills loaded at all proves the modern flow was used; the revision says so too.
fn assert_fastmcp(peer: &Peer, passes: &[Pass], published: &BTreeSet<String>, corpus: &Path) {
    assert_passes_but(peer, passes, &FASTMCP_KNOWN);
    for pass in passes {
        assert_eq!(
            pass.revision.as_deref(),
            Some("2026-07-28"),
            "{}",
            pass.name
        );
    }
    let ours = publishable_by_us(corpus);
    assert!(
        published.is_subset(&ours),
        "FastMCP publishes what we refuse: {:?}",
        published.difference(&ours).collect::<Vec<_>>()
    );
}

/// A peer under test, as the table names it.
struct Peer {
    name: &'static str,
    transport: &'static str,
    origin: Origin,
}

/// One pass over everything a peer publishes.
struct Pass {
    name: &'static str,
    published: usize,
    loaded: usize,
    files: usize,
    from_cache: usize,
    /// The protocol revision the source negotiated (`None`: the server was never contacted).
    revision: Option<String>,
    disagreements: Vec<String>,
}

/// A cold pass (empty root) and a warm one (same root, new cache handle, new source) over every
/// skill the peer lists; prints the README's interop table rows. Returns the passes and the
/// published skills' relative folders.
async fn every_skill_cold_and_warm(
    peer: &Peer,
    root: &Path,
    source: impl Fn() -> McpSource,
) -> (Vec<Pass>, BTreeSet<String>) {
    let mut published = BTreeSet::new();
    let mut passes = Vec::new();
    for pass in ["cold", "warm"] {
        let source = Arc::new(source());
        passes.push(run_pass(pass, root, &peer.origin, &source, &mut published).await);
    }
    let mut table = String::from(
        "| peer | transport | protocol | pass | skills published | loaded by skillcache | files verified | of them from the cache | disagreements |\n|---|---|---|---|---|---|---|---|---|",
    );
    for p in &passes {
        let _ = write!(
            table,
            "\n| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            peer.name,
            peer.transport,
            p.revision.as_deref().unwrap_or("-"),
            p.name,
            p.published,
            p.loaded,
            p.files,
            p.from_cache,
            p.disagreements.len()
        );
    }
    common::report(&format!("client-{}", peer.origin), &table);
    (passes, published)
}

fn assert_passes(peer: &Peer, passes: &[Pass]) {
    assert_passes_but(peer, passes, &[]);
}

/// Every published skill loads and every file verifies, except exactly the `known`
/// disagreements (URI, reason): each must occur, and nothing else may.
fn assert_passes_but(peer: &Peer, passes: &[Pass], known: &[(&str, &str)]) {
    for p in passes {
        let what = format!("{} over {}, {}", peer.name, peer.transport, p.name);
        let unexpected: Vec<&String> = p
            .disagreements
            .iter()
            .filter(|d| {
                !known
                    .iter()
                    .any(|(uri, why)| d.starts_with(&format!("{uri}: ")) && d.contains(why))
            })
            .collect();
        assert!(
            unexpected.is_empty(),
            "{what}: disagreements: {unexpected:#?}"
        );
        assert_eq!(
            p.disagreements.len(),
            known.len(),
            "{what}: the known disagreements {known:?} each occur once, got {:#?}",
            p.disagreements
        );
        assert!(p.published > 0, "{what}: nothing published");
        assert_eq!(
            p.loaded + known.len(),
            p.published,
            "{what}: every published skill loads"
        );
        assert!(p.files > 100, "{what}: only {} files verified", p.files);
        if p.name == "warm" {
            assert_eq!(
                p.from_cache, p.files,
                "{what}: every file is a verified cache hit"
            );
        }
    }
}

/// A new cache handle on `root` and the given source; every listed skill loaded and every file
/// of it read.
async fn run_pass(
    pass: &'static str,
    root: &Path,
    origin: &Origin,
    source: &Arc<McpSource>,
    published: &mut BTreeSet<String>,
) -> Pass {
    let tally = load_every_skill(root, origin, Arc::clone(source) as Arc<dyn SkillSource>).await;
    published.extend(tally.published);
    Pass {
        name: pass,
        published: tally.listed,
        loaded: tally.loaded,
        files: tally.files,
        from_cache: tally.from_cache,
        revision: source.protocol_version().map(str::to_owned),
        disagreements: tally.disagreements,
    }
}

/// A port free on loopback now (the server binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A server process, killed when the test ends however it ends.
struct Running(std::process::Child);

impl Running {
    fn start(mut command: Command) -> Running {
        Running(command.spawn().expect("start the peer"))
    }

    /// The URL the TS HTTP wrapper prints on its first line once it listens.
    fn announced_url(&mut self) -> String {
        let stdout = self.0.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the peer's first line");
        line.trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the peer did not announce its URL: {line:?}"))
            .to_owned()
    }

    /// Waits until the server accepts connections on `port`; fails if it exits first.
    fn await_port(&mut self, port: u16) {
        // Python starts slowly on a busy machine: many short tries, each ending as soon as the
        // port answers. No timing is asserted; a server that never comes up is reported.
        for _ in 0..1200 {
            if let Some(status) = self.0.try_wait().expect("peer status") {
                panic!("the peer exited before listening on {port}: {status}");
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the peer never listened on {port}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn interop_conformance_sep_2640_client_scenarios_pass() {
    if !enabled() {
        return;
    }
    let dir = install_peers();
    let driver = common::example_bin("conformance_client");
    let driver = driver.to_str().expect("a UTF-8 path");
    let mut table = String::from("| client scenario | result |\n|---|---|");
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        // The harness prints its checks on stdout and its summary on stderr.
        let (status, text) = run_harness(
            dir,
            &["client", "--scenario", scenario, "--command", driver],
        );
        let ok =
            status.success() && text.contains("OVERALL: PASSED") && text.contains(", 0 failed");
        let _ = write!(
            table,
            "\n| {scenario} | {} |",
            if ok { "passed" } else { "FAILED" }
        );
        if !ok {
            failures.push(format!("{scenario} failed ({status}):\n{text}"));
        }
    }
    let _ = write!(
        table,
        "\n\nconformance: {}/{} SEP-2640 client scenarios passed",
        SCENARIOS.len() - failures.len(),
        SCENARIOS.len()
    );
    common::report("client-conformance", &table);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
