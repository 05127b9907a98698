//! K3: after a purge, nothing of the purged origin's content is readable in any file under the
//! root — blobs, entries (descriptions), approvals, quarantined copies, temporaries, and the
//! index's own files: `SQLite` keeps deleted rows' bytes in free pages and old page images in its
//! write-ahead log until the index is rewritten. Checked by content: every file under the root
//! is read as raw bytes, recursively, and must not hold the purged origin's marker; another
//! origin's content is still there and still loads from the cache.

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cli_env::{Env, bin, code};
use serde_json::{Value, json};
use skillcache::local::SkillServer;
use skillcache::{ApprovalPolicy, Origin, Provenance, SkillCache, SkillEntry, SkillUri};

const DEADLINE: Duration = Duration::from_secs(60);

fn origin(label: &str) -> Origin {
    Origin::new(label).expect("a valid label")
}

/// Every file under `dir` (links are not followed; a link's own bytes are its target's name),
/// read as raw bytes. Folders are listed as root, whatever their mode.
fn all_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.expect("entry").path();
        let m = fs::symlink_metadata(&p).expect("stat");
        if m.is_dir() {
            out.extend(all_files(&p));
        } else if m.file_type().is_symlink() {
            let target = fs::read_link(&p).expect("link");
            out.push((p, target.into_os_string().into_encoded_bytes()));
        } else {
            out.push((
                p.clone(),
                fs::read(&p).expect("every file under the root is readable"),
            ));
        }
    }
    out
}

/// The files under `dir` whose bytes hold `marker` anywhere.
fn holding(dir: &Path, marker: &str) -> Vec<PathBuf> {
    all_files(dir)
        .into_iter()
        .filter(|(_, b)| b.windows(marker.len()).any(|w| w == marker.as_bytes()))
        .map(|(p, _)| p)
        .collect()
}

/// A skill `notes` under `dir/label` whose description, body and template carry `marker`;
/// `version` changes the description, so that a refresh rewrites the entry's row.
fn serve_folder(dir: &Path, label: &str, marker: &str, version: u32) -> PathBuf {
    let folder = dir.join(label).join("notes");
    fs::create_dir_all(folder.join("templates")).expect("mkdir");
    fs::write(
        folder.join("SKILL.md"),
        format!(
            "---\nname: notes\ndescription: Takes notes for {marker} (version {version}).\n---\n\
             The {marker} notes: use templates/a.md.\n"
        ),
    )
    .expect("write");
    fs::write(
        folder.join("templates/a.md"),
        format!("template of {marker}"),
    )
    .expect("write");
    dir.join(label)
}

/// A cache with two origins, `team` and `docs`, each with its skill approved and loaded; team's
/// entry refreshed once (its old row rewritten), one of its blobs caught tampered (now in its
/// quarantine), and a crashed publisher's temporary in its staging. Every marker is somewhere
/// under the root before the purge.
async fn two_origins(dir: &Path, team_marker: &str, docs_marker: &str) -> (SkillCache, SkillEntry) {
    let cache = SkillCache::builder()
        .root(dir.join("root"))
        .key_file(dir.join("host.key"))
        .open()
        .expect("open");
    let uri = SkillUri::parse("skill://notes/SKILL.md").expect("uri");
    let mut docs_entry = None;
    for (label, marker) in [("team", team_marker), ("docs", docs_marker)] {
        let o = origin(label);
        let served = serve_folder(dir, label, marker, 1);
        cache.connect(o.clone(), Arc::new(SkillServer::new(served)));
        let entry = cache.entry(&o, &uri).await.expect("entry").entry;
        cache.approve(&o, &entry, None).await.expect("approve");
        cache.load_all(&o, &entry).await.expect("load all");
        if label == "docs" {
            docs_entry = Some(entry);
        }
    }
    // A refresh: the served description changes, the entry row is written again.
    serve_folder(dir, "team", team_marker, 2);
    let team = origin("team");
    let fresh = cache.entry(&team, &uri).await.expect("refresh").entry;
    assert!(
        fresh.description().contains("version 2"),
        "the entry was refreshed"
    );
    cache
        .approve(&team, &fresh, None)
        .await
        .expect("approve again");
    cache.load_all(&team, &fresh).await.expect("load all");
    // The loads' files reach the store behind them: wait for them before looking at the disk.
    cache.flush().await;
    // A tampered copy of team's template, quarantined by verify, and a leftover temporary.
    let root = dir.join("root");
    let blob = all_files(&root.join("origins/team"))
        .into_iter()
        .find(|(_, b)| b.as_slice() == format!("template of {team_marker}").as_bytes())
        .expect("the template's blob")
        .0;
    let shard = blob.parent().expect("shard");
    fs::set_permissions(shard, fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::remove_file(&blob).expect("remove");
    fs::write(&blob, format!("tampered {team_marker}")).expect("tamper");
    let report = cache.verify(Some(&team), |_, _| {}).await.expect("verify");
    assert_eq!(report.corrupt.len(), 1, "the tampered copy is quarantined");
    fs::write(
        root.join("origins/team/tmp/999-0-leftover.tmp"),
        format!("partial {team_marker}"),
    )
    .expect("a leftover temporary");
    let found = holding(&root, team_marker);
    let names: Vec<String> = found
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("index.sqlite3")),
        "before the purge the index holds team's description: {names:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.to_string_lossy().contains("quarantine"))
    );
    (cache, docs_entry.expect("docs"))
}

/// Nothing of `marker` anywhere under `root`; `docs` still there and loading from the cache.
async fn nothing_left(
    cache: &SkillCache,
    root: &Path,
    marker: &str,
    docs: &SkillEntry,
    kept: &str,
) {
    let left = holding(root, marker);
    assert!(
        left.is_empty(),
        "still holding the purged origin's marker: {left:?}"
    );
    assert!(
        !holding(root, kept).is_empty(),
        "the other origin is still there"
    );
    let docs_origin = origin("docs");
    assert!(cache.is_approved(&docs_origin, docs).await.expect("index"));
    let skill = cache.load(&docs_origin, docs).await.expect("still loads");
    let template = skill.read("templates/a.md").await.expect("read");
    assert_eq!(template.provenance(), Provenance::Cache);
    assert_eq!(template.bytes(), format!("template of {kept}").as_bytes());
    assert_eq!(cache.origins().await.expect("origins"), [docs_origin]);
}

#[tokio::test]
async fn k3_purge_leaves_no_byte_of_the_origin_in_any_file_under_the_root() {
    let dir = common::scratch();
    let (team_marker, docs_marker) = ("K3MARK-team-1f4c9e", "K3KEEP-docs-77ab20");
    let (cache, docs) = two_origins(dir.path(), team_marker, docs_marker).await;
    tokio::time::timeout(DEADLINE, cache.purge(&origin("team")))
        .await
        .expect("within the deadline")
        .expect("purge");
    nothing_left(
        &cache,
        &dir.path().join("root"),
        team_marker,
        &docs,
        docs_marker,
    )
    .await;
}

#[tokio::test]
async fn k3_purge_absent_leaves_no_byte_of_a_removed_origin_in_any_file_under_the_root() {
    let dir = common::scratch();
    let (team_marker, docs_marker) = ("K3MARK-team-5a02d1", "K3KEEP-docs-c3e811");
    let (cache, docs) = two_origins(dir.path(), team_marker, docs_marker).await;
    let removed = tokio::time::timeout(DEADLINE, cache.purge_absent(&[origin("docs")]))
        .await
        .expect("within the deadline")
        .expect("purge_absent");
    assert_eq!(removed, [origin("team")]);
    nothing_left(
        &cache,
        &dir.path().join("root"),
        team_marker,
        &docs,
        docs_marker,
    )
    .await;
}

#[tokio::test]
async fn k3_a_damaged_index_kept_aside_goes_with_a_purge() {
    // A damaged index moved aside (R-H6) holds every origin's rows as they were, and cannot be
    // edited: a purge removes it.
    let dir = common::scratch();
    let root = dir.path().join("root");
    let cache = SkillCache::builder()
        .root(&root)
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("open");
    for name in [
        "index.sqlite3.damaged-1700000000",
        "index.sqlite3.damaged-1700000000.2-wal",
    ] {
        fs::write(root.join(name), "rows of K3MARK-team-damaged").expect("plant");
    }
    // Not a name a heal makes: left alone.
    fs::write(
        root.join("index.sqlite3.damaged-notes"),
        "K3MARK-team-damaged",
    )
    .expect("plant");
    cache.purge(&origin("team")).await.expect("purge");
    let left = holding(&root, "K3MARK-team-damaged");
    assert_eq!(left, [root.join("index.sqlite3.damaged-notes")]);
}

// ---- the CLI ------------------------------------------------------------------------------

fn run(env: &Env, args: &[&str]) -> std::process::Output {
    let mut cli = env.cli();
    cli.args(args);
    common::within(DEADLINE, move || cli.output().expect("run skillcache"))
        .expect("the command ends within the deadline")
}

#[test]
fn k3_cli_purge_origin_and_purge_absent_leave_no_byte_of_the_origin() {
    let env = Env::keyed();
    let labels = ["docs", "old", "older"];
    let marker = |l: &str| format!("K3MARK-{l}-cli-9d1e");
    for label in labels {
        serve_folder(&env.path("served"), label, &marker(label), 1);
    }
    let servers: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| {
            (
                (*l).to_owned(),
                json!({"command": bin(), "args": ["serve", env.path(&format!("served/{l}"))]}),
            )
        })
        .collect();
    let config = env.path("mcp.json");
    fs::write(&config, json!({"mcpServers": servers}).to_string()).expect("config");
    let config = config.to_str().expect("utf-8");
    for label in labels {
        let load = run(
            &env,
            &[
                "load",
                "--config",
                config,
                "--all",
                "--origin",
                label,
                "skill://notes/SKILL.md",
            ],
        );
        assert_eq!(code(&load), 0, "{}", String::from_utf8_lossy(&load.stderr));
    }
    let root = env.root();
    assert!(!holding(&root, &marker("old")).is_empty());

    let purge = run(&env, &["purge", "--origin", "old"]);
    assert_eq!(
        code(&purge),
        0,
        "{}",
        String::from_utf8_lossy(&purge.stderr)
    );
    assert_eq!(holding(&root, &marker("old")), Vec::<PathBuf>::new());

    let only_docs = env.path("docs.json");
    fs::write(
        &only_docs,
        json!({"mcpServers": {"docs": servers["docs"].clone()}}).to_string(),
    )
    .expect("config");
    let absent = run(
        &env,
        &[
            "purge",
            "--config",
            only_docs.to_str().expect("utf-8"),
            "--absent",
        ],
    );
    assert_eq!(
        code(&absent),
        0,
        "{}",
        String::from_utf8_lossy(&absent.stderr)
    );
    assert_eq!(holding(&root, &marker("older")), Vec::<PathBuf>::new());
    assert!(!holding(&root, &marker("docs")).is_empty(), "docs is kept");
}
