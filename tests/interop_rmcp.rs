//! rmcp 3.11, the official Rust SDK, on both sides of skillcache (issue 41, P5 and P6), over the
//! corpus (`tests/data/corpus/skills`), beside the TS and Python peers of `interop.rs` and
//! `interop_serve.rs`:
//!
//! - rmcp's client (`Peer::list_all_skills`, `Skill::validate`, `resources/read`,
//!   `SkillResource::verify`) against `skillcache serve` over stdio: every skill `serve`
//!   publishes passes rmcp's checks and every file verifies;
//! - skillcache (`McpSource`) against rmcp's `SkillCatalog` server: every skill the catalog
//!   publishes either loads and verifies or is refused by a rule skillcache keeps and rmcp does
//!   not (named below and in docs/interop.md);
//! - what the two servers publish of the same folder, skill by skill and file by file, with the
//!   rule behind every difference;
//! - a host holding rmcp's `Skill` values hands them to skillcache (`SkillEntry::from_rmcp`)
//!   without listing again, and gets exactly the entries skillcache's own listing makes.
//!
//! Each writes its table to `target/tmp/interop-report/`. Always on: the peers are rmcp, already
//! a dependency (its `skills-fs` feature for the tests only).
#![allow(clippy::result_large_err)]

mod common;
#[path = "common/skill_catalog.rs"]
mod skill_catalog;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::ServiceExt as _;
use rmcp::model::{ReadResourceRequestParams, ResourceContents, SkillResources};
use rmcp::service::{Peer, RoleClient, RunningService};
use skillcache::entry::Validation;
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Origin, SkillCache, SkillEntry};

/// rmcp's client over stdio to `skillcache serve DIR`.
async fn rmcp_to_serve(dir: &Path) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(common::bin());
    command.arg("serve").arg(dir);
    let child = rmcp::transport::TokioChildProcess::new(command).expect("start serve");
    ().serve(child).await.expect("initialize with serve")
}

/// rmcp's client to a `SkillCatalog` of `dir`.
async fn rmcp_to_catalog(dir: &Path) -> RunningService<RoleClient, ()> {
    ().serve(skill_catalog::serve_catalog(dir).await)
        .await
        .expect("initialize with the catalog")
}

/// What rmcp's client saw of one server: every skill's files (`uri -> size`), the skills rmcp's
/// own `Skill::validate` refused, and every file that failed `SkillResource::verify`.
#[derive(Default)]
struct Sweep {
    skills: BTreeMap<String, BTreeMap<String, u64>>,
    /// Why skillcache's strict rules would not publish the skill, if they would not.
    strict_refusal: BTreeMap<String, &'static str>,
    invalid: Vec<String>,
    verified: usize,
    failures: Vec<String>,
}

/// The bytes of a `resources/read` answer's first content (text or base64 blob).
fn bytes_of(contents: &[ResourceContents]) -> Option<Vec<u8>> {
    match contents.first()? {
        ResourceContents::TextResourceContents { text, .. } => Some(text.clone().into_bytes()),
        ResourceContents::BlobResourceContents { blob, .. } => {
            base64::engine::general_purpose::STANDARD.decode(blob).ok()
        }
        _ => None,
    }
}

/// rmcp alone: list every skill, read every file, verify each with `SkillResource::verify`.
async fn rmcp_sweep(peer: &Peer<RoleClient>) -> Sweep {
    let mut sweep = Sweep::default();
    for skill in peer.list_all_skills().await.expect("skills/list") {
        if let Err(e) = skill.validate() {
            sweep.invalid.push(format!("{}: {e}", skill.uri));
        }
        if let Some(why) = strict_refusal(&skill) {
            sweep.strict_refusal.insert(skill.uri.clone(), why);
        }
        let SkillResources::Files(files) = &skill.resources else {
            sweep.skills.insert(skill.uri.clone(), BTreeMap::new());
            continue;
        };
        let mut listed = BTreeMap::new();
        for file in files {
            listed.insert(file.uri.clone(), file.size);
            let read = peer
                .read_resource(ReadResourceRequestParams::new(&file.uri))
                .await;
            match read.ok().and_then(|r| bytes_of(&r.contents)) {
                Some(bytes) => match file.verify(&bytes) {
                    Ok(()) => sweep.verified += 1,
                    Err(e) => sweep.failures.push(e.to_string()),
                },
                None => sweep.failures.push(format!("{}: no bytes", file.uri)),
            }
        }
        sweep.skills.insert(skill.uri.clone(), listed);
    }
    sweep
}

/// The rule of skillcache's strict publishing (Agent Skills) that `skill` breaks and rmcp's
/// `Skill::validate` does not check, if any: the differences docs/interop.md names.
fn strict_refusal(skill: &rmcp::model::Skill) -> Option<&'static str> {
    let extra = &skill.frontmatter.extra;
    if skill.frontmatter.description.chars().count() > 1024 {
        Some("a description over 1,024 characters")
    } else if extra.get("allowed-tools").is_some_and(|t| !t.is_string()) {
        Some("`allowed-tools` not a string")
    } else if extra.get("metadata").is_some_and(|m| {
        !m.as_object()
            .is_some_and(|o| o.values().all(serde_json::Value::is_string))
    }) {
        Some("`metadata` not a map of strings")
    } else {
        None
    }
}

fn file_count(sweep: &Sweep) -> usize {
    sweep.skills.values().map(BTreeMap::len).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interop_rmcp_client_validates_and_verifies_every_file_skillcache_serve_publishes() {
    let client = rmcp_to_serve(&common::corpus_skills()).await;
    let sweep = rmcp_sweep(client.peer()).await;
    let table = format!(
        "| rmcp 3.11 client against `skillcache serve` (stdio) | |\n|---|---|\n| skills listed (`list_all_skills`) | {} |\n| refused by `Skill::validate` | {} |\n| files listed | {} |\n| files read and verified (`SkillResource::verify`) | {} |\n| failures | {} |",
        sweep.skills.len(),
        sweep.invalid.len(),
        file_count(&sweep),
        sweep.verified,
        sweep.failures.len()
    );
    common::report("rmcp-client-serve", &table);
    assert!(
        sweep.skills.len() >= 20,
        "serve published {}",
        sweep.skills.len()
    );
    assert!(sweep.invalid.is_empty(), "{:#?}", sweep.invalid);
    assert!(sweep.failures.is_empty(), "{:#?}", sweep.failures);
    assert_eq!(sweep.verified, file_count(&sweep));
    client.cancel().await.expect("stop");
}

/// skillcache's own validation of the catalog's listing: the skills it refuses and why.
async fn skillcache_refusals(dir: &Path, root: &Path) -> BTreeMap<String, String> {
    let cache = SkillCache::builder()
        .root(root)
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    let origin = Origin::new("catalog").expect("label");
    let source = McpSource::from_transport(skill_catalog::serve_catalog(dir).await);
    cache.connect(origin.clone(), Arc::new(source));
    let mut refused = BTreeMap::new();
    for item in cache.list(&origin).await.expect("skills/list") {
        if let Err(e) = item {
            refused.insert(refused_uri(&e), e.to_string());
        }
    }
    refused
}

/// The skill URI an entry error names (its message starts `invalid skill entry (URI)` or names
/// the skill when a limit is over).
fn refused_uri(e: &skillcache::Error) -> String {
    let text = e.to_string();
    text.split(['(', ')', ' '])
        .find(|w| w.starts_with("skill://"))
        .unwrap_or(&text)
        .trim_end_matches(':')
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interop_rmcp_skillcache_loads_every_catalog_skill_its_rules_accept_and_names_each_refusal()
{
    let tmp = common::scratch();
    let corpus = common::corpus_skills();
    let origin = Origin::new("catalog").expect("label");
    let source = McpSource::from_transport(skill_catalog::serve_catalog(&corpus).await);
    let tally =
        common::peers::load_every_skill(&tmp.path().join("root"), &origin, Arc::new(source)).await;
    let refused: Vec<&String> = tally
        .disagreements
        .iter()
        .filter(|d| d.starts_with("entry refused by skillcache"))
        .collect();
    let mut table = format!(
        "| skillcache against rmcp's `SkillCatalog` | |\n|---|---|\n| skills the catalog lists | {} |\n| loaded by skillcache | {} |\n| files verified | {} |\n| entries skillcache refuses | {} |",
        tally.listed,
        tally.loaded,
        tally.files,
        refused.len()
    );
    for r in &refused {
        let _ = write!(table, "\n| refused | {} |", r.replace('|', "\\|"));
    }
    common::report("skillcache-skill-catalog", &table);
    assert_eq!(
        tally.loaded + refused.len(),
        tally.listed,
        "every entry skillcache accepts loads: {:#?}",
        tally.disagreements
    );
    assert!(tally.loaded >= 20, "{}", tally.loaded);
    // Every refusal is one of the rules docs/interop.md names (skillcache keeps them, rmcp's
    // `Skill::validate` does not check them).
    for r in &refused {
        assert!(
            r.contains("description") || r.contains("compatibility"),
            "a refusal docs/interop.md does not name: {r}"
        );
    }
}

/// Every file one server lists of a skill both list and the other does not, with the side.
fn file_differences(c: &Sweep, s: &Sweep) -> Vec<String> {
    let mut diffs = Vec::new();
    for (uri, files) in &c.skills {
        let Some(theirs) = s.skills.get(uri) else {
            continue;
        };
        let a: BTreeSet<&String> = files.keys().collect();
        let b: BTreeSet<&String> = theirs.keys().collect();
        for f in a.symmetric_difference(&b) {
            let side = if a.contains(f) {
                "catalog only"
            } else {
                "serve only"
            };
            diffs.push(format!("{f} ({side})"));
        }
    }
    diffs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interop_rmcp_catalog_and_serve_publish_the_same_folders_and_every_difference_is_named() {
    let corpus = common::corpus_skills();
    let catalog = rmcp_to_catalog(&corpus).await;
    let serve = rmcp_to_serve(&corpus).await;
    let (c, s) = (
        rmcp_sweep(catalog.peer()).await,
        rmcp_sweep(serve.peer()).await,
    );
    let only_catalog: Vec<&String> = c
        .skills
        .keys()
        .filter(|k| !s.skills.contains_key(*k))
        .collect();
    let only_serve: Vec<&String> = s
        .skills
        .keys()
        .filter(|k| !c.skills.contains_key(*k))
        .collect();
    let file_diffs = file_differences(&c, &s);
    let mut table = format!(
        "| | `SkillCatalog` | `skillcache serve` |\n|---|---|---|\n| skills listed | {} | {} |\n| files listed | {} | {} |\n| files verified by rmcp | {} | {} |",
        c.skills.len(),
        s.skills.len(),
        file_count(&c),
        file_count(&s),
        c.verified,
        s.verified
    );
    for uri in &only_catalog {
        let why = c
            .strict_refusal
            .get(*uri)
            .copied()
            .unwrap_or("(no rule named)");
        let _ = write!(table, "\n| only the catalog lists | {uri}: {why} | |");
    }
    for uri in &only_serve {
        let _ = write!(table, "\n| only serve lists | | {uri} |");
    }
    for f in &file_diffs {
        let _ = write!(table, "\n| a file of a skill both list | {f} | |");
    }
    common::report("rmcp-catalog-vs-serve", &table);
    assert!(c.failures.is_empty() && s.failures.is_empty());
    // The catalog publishes what skillcache's strict rules refuse: a description over 1,024
    // characters, an `allowed-tools` list (the Agent Skills rules, which `Skill::validate` does
    // not check); and nothing else.
    for uri in &only_catalog {
        assert!(
            c.strict_refusal.contains_key(*uri),
            "{uri}: a difference docs/interop.md does not name"
        );
    }
    assert!(
        c.strict_refusal
            .keys()
            .all(|uri| only_catalog.contains(&uri)),
        "serve published a skill its strict rules refuse: {:#?}",
        c.strict_refusal
    );
    assert!(only_serve.is_empty(), "{only_serve:#?}");
    // Files only `serve` lists are hidden names (a component starting with `.`), which the
    // catalog never serves.
    for f in &file_diffs {
        assert!(
            f.ends_with("(serve only)") && f.contains("/."),
            "{f}: a difference docs/interop.md does not name"
        );
    }
    catalog.cancel().await.expect("stop");
    serve.cancel().await.expect("stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p6_rmcp_skill_values_a_host_already_listed_load_without_listing_again() {
    let tmp = common::scratch();
    let corpus = common::corpus_skills();
    let client = rmcp_to_catalog(&corpus).await;
    let listed = client.peer().list_all_skills().await.expect("skills/list");
    let cache = SkillCache::builder()
        .root(tmp.path().join("root"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    let origin = Origin::new("catalog").expect("label");
    // The host's own connection, shared: skillcache lists nothing here.
    cache.connect(
        origin.clone(),
        Arc::new(McpSource::from_peer(client.peer().clone())),
    );
    let validation = Validation::default();
    let (mut loaded, mut files, mut refused) = (0, 0, BTreeSet::new());
    for skill in &listed {
        // Validation stays skillcache's: the same JSON off the wire makes the same entry.
        let json = serde_json::to_value(skill).expect("json");
        let from_json = SkillEntry::from_json(&json, &validation);
        match SkillEntry::from_rmcp(skill, &validation) {
            Ok(entry) => {
                assert_eq!(Some(&entry), from_json.as_ref().ok());
                let (_, read) = cache.load_all(&origin, &entry).await.expect("load_all");
                loaded += 1;
                files += read.len();
            }
            Err(e) => {
                assert!(from_json.is_err(), "{e}");
                refused.insert(skill.uri.clone());
            }
        }
    }
    // Exactly what skillcache's own listing of the same server refuses.
    let own = skillcache_refusals(&corpus, &tmp.path().join("root-own")).await;
    assert_eq!(
        refused,
        own.keys().cloned().collect::<BTreeSet<_>>(),
        "{own:#?}"
    );
    assert_eq!(loaded + refused.len(), listed.len());
    assert!(
        loaded >= 20 && files > 400,
        "{loaded} skills, {files} files"
    );
    client.cancel().await.expect("stop");
}
