//! Interoperability with real peers written by others (issue: interop), off by default because it
//! needs the npm registry. `SKILLCACHE_INTEROP=1 cargo test --test interop -- --nocapture`; the
//! CI script turns it on. When on and the peers cannot be installed, the run fails loudly.
//!
//! - The official TypeScript SDK skills server (`@modelcontextprotocol/server` 2.4.0) over stdio
//!   on every skill folder of `shared/corpus/skills`: every skill it publishes must load through
//!   skillcache and every one of its files verify (size, digest; frontmatter for `SKILL.md`),
//!   from an empty cache and again from a warm one.
//! - The official conformance harness (`@modelcontextprotocol/conformance` 0.2.0-alpha.12): the
//!   four SEP-2640 client scenarios against `examples/conformance_client.rs` over Streamable HTTP.
#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use skillcache::cache::Provenance;
use skillcache::entry::Validation;
use skillcache::local::{find_skills, inspect};
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Origin, SkillCache};

use common::peers::{enabled, harness, install_peers, node22};

const SCENARIOS: [&str; 4] = [
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
];

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
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = Origin::new("ts-server").expect("label");

    // What our own reading of the folder says is publishable (default rules).
    let ours: BTreeSet<String> = find_skills(&corpus)
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
        .collect();

    let mut rows = Vec::new();
    let mut published = BTreeSet::new();
    for pass in ["cold", "warm"] {
        rows.push(
            run_pass(
                pass,
                &tmp.path().join("root"),
                &origin,
                &command,
                &mut published,
            )
            .await,
        );
    }

    println!(
        "\n| pass | skills published by the TS server | loaded by skillcache | files verified | of them from the cache | disagreements |"
    );
    println!("|---|---|---|---|---|---|");
    for (pass, p, l, f, c, d) in &rows {
        println!("| {pass} | {p} | {l} | {f} | {c} | {} |", d.len());
    }
    for (pass, p, l, f, c, d) in &rows {
        assert!(
            d.is_empty(),
            "{pass}: disagreements with the TS server: {d:#?}"
        );
        assert_eq!(l, p, "{pass}: every published skill loads");
        assert!(*f > 400, "{pass}: only {f} files verified");
        if *pass == "warm" {
            assert_eq!(c, f, "warm: every file is a verified cache hit");
        }
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

/// One pass over everything the TS server publishes: (pass, published, loaded, files verified,
/// files from the cache, disagreements).
type Row = (&'static str, usize, usize, usize, usize, Vec<String>);

/// A new cache handle and a new server process each pass; the root (and its blobs) stay.
async fn run_pass(
    pass: &'static str,
    root: &Path,
    origin: &Origin,
    command: &str,
    published: &mut BTreeSet<String>,
) -> Row {
    // Interop is about verification, not activation: the gate is opted out of (R-P1).
    let cache = SkillCache::builder()
        .root(root)
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    cache.connect(
        origin.clone(),
        Arc::new(McpSource::stdio(common::sh(command))),
    );
    let listed = cache.list(origin).await.expect("skills/list");
    let (mut loaded, mut files, mut from_cache) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for item in listed {
        let info = match item {
            Ok(info) => info,
            Err(e) => {
                disagreements.push(format!("entry refused by skillcache: {e}"));
                continue;
            }
        };
        published.insert(
            info.entry
                .uri()
                .root()
                .trim_start_matches("skill://")
                .to_owned(),
        );
        let skill = match cache.load(origin, &info.entry).await {
            Ok(skill) => skill,
            Err(e) => {
                disagreements.push(format!("{}: {e}", info.entry.uri()));
                continue;
            }
        };
        loaded += 1;
        for f in skill.files() {
            match skill.read(f.uri().as_str()).await {
                Ok(file) if file.verified() => {
                    files += 1;
                    from_cache += usize::from(file.provenance() == Provenance::Cache);
                }
                Ok(file) => disagreements.push(format!("{} came back unverified", file.uri())),
                Err(e) => disagreements.push(format!("{}: {e}", f.uri())),
            }
        }
    }
    (
        pass,
        published.len(),
        loaded,
        files,
        from_cache,
        disagreements,
    )
}

#[test]
fn interop_conformance_sep_2640_client_scenarios_pass() {
    if !enabled() {
        return;
    }
    let dir = install_peers();
    let node22 = node22(dir);
    let harness = harness(dir);
    let driver = common::example_bin("conformance_client");
    let mut passed = 0;
    for scenario in SCENARIOS {
        let out = Command::new(&node22)
            .arg(&harness)
            .args(["client", "--scenario", scenario, "--command"])
            .arg(&driver)
            .output()
            .expect("run the conformance harness");
        // The harness prints its checks on stdout and its summary on stderr.
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let ok =
            out.status.success() && text.contains("OVERALL: PASSED") && text.contains(", 0 failed");
        println!("| {scenario} | {} |", if ok { "passed" } else { "FAILED" });
        assert!(ok, "{scenario} failed ({}):\n{text}", out.status);
        passed += 1;
    }
    println!(
        "conformance: {passed}/{} SEP-2640 client scenarios passed",
        SCENARIOS.len()
    );
}
