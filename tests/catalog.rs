//! R-Q1, one catalog: the skills of every bound origin in one view, each under a handle unique
//! across origins and stable across runs; skills that share a name — two paths of one origin,
//! two origins, an origin and the host's local skills — are all kept, told apart, and reported
//! as a collision, never one silently standing in for another (SEP-2640, Names; Security
//! Considerations, name collisions). The library through `local::SkillServer` and the test
//! double; the CLI through the real `skillcache serve` binary.

#[path = "common/cli_env.rs"]
mod cli_env;
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cli_env::{Env, bin, code};
use common::double::Double;
use serde_json::{Value, json};
use skillcache::local::SkillServer;
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Catalog, CatalogSkill, Origin, SkillCache};

/// Nothing here should take long; a hang fails the test instead of stalling the suite.
const DEADLINE: Duration = Duration::from_secs(60);

fn origin(label: &str) -> Origin {
    Origin::new(label).expect("a valid label")
}

/// Writes a skill at `dir/path` whose name is the last segment of `path` and whose body says
/// `body`.
fn skill_at(dir: &Path, path: &str, body: &str) {
    let name = path.rsplit('/').next().expect("a name");
    let folder = dir.join(path);
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill.\n---\n{body}\n"),
    )
    .expect("write");
}

fn open(dir: &common::Scratch) -> SkillCache {
    SkillCache::builder()
        .root(dir.path().join("root"))
        .key_file(dir.path().join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
        .expect("cache opens")
}

/// Binds each (label, folder) to a `SkillServer` over `dir/folder`.
fn bind(cache: &SkillCache, dir: &Path, servers: &[&str]) {
    for label in servers {
        cache.connect(origin(label), Arc::new(SkillServer::new(dir.join(label))));
    }
}

async fn catalog(cache: &SkillCache, local: &[&str]) -> Catalog {
    tokio::time::timeout(DEADLINE, cache.catalog(local))
        .await
        .expect("the catalog is listed within the deadline")
        .expect("catalog")
}

/// (handle, origin, URI, `collides_with`) of every skill, in catalog order.
fn rows(c: &Catalog) -> Vec<(String, String, String, Vec<String>)> {
    c.skills()
        .iter()
        .map(|s| {
            (
                s.handle().to_owned(),
                s.origin().as_str().to_owned(),
                s.entry().uri().as_str().to_owned(),
                s.collides_with().to_vec(),
            )
        })
        .collect()
}

#[tokio::test]
async fn q1_two_skills_of_one_origin_sharing_a_name_are_both_listed_by_path() {
    let dir = common::scratch();
    skill_at(
        &dir.path().join("acme"),
        "billing/refunds",
        "Billing refunds.",
    );
    skill_at(
        &dir.path().join("acme"),
        "support/refunds",
        "Support refunds.",
    );
    skill_at(&dir.path().join("acme"), "notes", "Notes.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["acme"]);
    let c = catalog(&cache, &[]).await;
    assert_eq!(
        rows(&c),
        [
            (
                "skill://billing/refunds".into(),
                "acme".into(),
                "skill://billing/refunds/SKILL.md".into(),
                vec!["skill://support/refunds".to_owned()]
            ),
            (
                "notes".into(),
                "acme".into(),
                "skill://notes/SKILL.md".into(),
                vec![]
            ),
            (
                "skill://support/refunds".into(),
                "acme".into(),
                "skill://support/refunds/SKILL.md".into(),
                vec!["skill://billing/refunds".to_owned()]
            ),
        ]
    );
    // Neither is "the" refunds: the bare name finds nothing, each path finds its own.
    assert!(c.get("refunds").is_none());
    let billing = c.get("skill://billing/refunds").expect("by handle");
    let loaded = cache
        .load(billing.origin(), billing.entry())
        .await
        .expect("loads");
    assert!(
        String::from_utf8_lossy(loaded.skill_md().bytes()).contains("Billing refunds."),
        "the handle reaches the skill it names"
    );
    assert!(c.failures().is_empty());
}

#[tokio::test]
async fn q1_a_nested_skill_sharing_a_name_with_a_top_level_one_is_qualified_too() {
    // `refunds` at the top and `refunds` nested inside `billing` (a skill itself): neither
    // gets the bare name, so the top-level one is not silently preferred.
    let dir = common::scratch();
    let served = dir.path().join("docs");
    skill_at(&served, "refunds", "Top.");
    skill_at(&served, "billing", "Billing.");
    skill_at(&served, "billing/refunds", "Nested.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["docs"]);
    let c = catalog(&cache, &[]).await;
    let handles: Vec<&str> = c.skills().iter().map(CatalogSkill::handle).collect();
    assert_eq!(
        handles,
        ["billing", "skill://billing/refunds", "skill://refunds"]
    );
}

#[tokio::test]
async fn q1_the_same_name_from_two_origins_is_qualified_by_each_origin_label() {
    let dir = common::scratch();
    skill_at(&dir.path().join("docs"), "refunds", "Docs refunds.");
    skill_at(&dir.path().join("team"), "refunds", "Team refunds.");
    skill_at(&dir.path().join("team"), "notes", "Notes.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["team", "docs"]);
    let c = catalog(&cache, &[]).await;
    let handles: Vec<(&str, Vec<String>)> = c
        .skills()
        .iter()
        .map(|s| (s.handle(), s.collides_with().to_vec()))
        .collect();
    // `notes` shares its name with nobody: it keeps the bare name beside the collision.
    assert_eq!(
        handles,
        [
            ("docs:refunds", vec!["team:refunds".to_owned()]),
            ("notes", vec![]),
            ("team:refunds", vec!["docs:refunds".to_owned()]),
        ]
    );
    // Each handle reads from its own origin only (R-O6).
    for (handle, body) in [
        ("docs:refunds", "Docs refunds."),
        ("team:refunds", "Team refunds."),
    ] {
        let s = c.get(handle).expect("by handle");
        let loaded = cache.load(s.origin(), s.entry()).await.expect("loads");
        assert_eq!(loaded.skill_md().origin(), s.origin());
        assert!(String::from_utf8_lossy(loaded.skill_md().bytes()).contains(body));
    }
    assert!(c.get("refunds").is_none(), "no origin wins the bare name");
}

#[tokio::test]
async fn q1_a_local_skill_keeps_its_name_and_the_mcp_skill_is_qualified_and_reported() {
    let dir = common::scratch();
    skill_at(&dir.path().join("docs"), "code-review", "Remote review.");
    skill_at(&dir.path().join("docs"), "refunds", "Refunds.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["docs"]);
    let c = catalog(&cache, &["code-review", "deploy"]).await;
    let remote = c.get("docs:code-review").expect("qualified by its origin");
    assert_eq!(
        remote.collides_with(),
        ["code-review"],
        "the local party is named"
    );
    assert!(
        c.get("code-review").is_none(),
        "the local skill's name never finds the MCP skill"
    );
    assert_eq!(
        c.get("refunds").expect("unique").collides_with(),
        [] as [String; 0]
    );
    // A local name that could pose as a qualified handle is refused before anything is listed.
    for bad in ["docs:refunds", "skill://refunds", ""] {
        let err = cache.catalog(&[bad]).await.expect_err("refused");
        assert!(
            matches!(err, skillcache::Error::Config(_)),
            "{bad:?}: {err}"
        );
    }
}

#[tokio::test]
async fn q1_handles_are_the_same_across_two_cache_opens_and_binding_orders() {
    let dir = common::scratch();
    skill_at(&dir.path().join("docs"), "refunds", "A.");
    skill_at(&dir.path().join("team"), "billing/refunds", "B.");
    skill_at(&dir.path().join("team"), "support/refunds", "C.");
    skill_at(&dir.path().join("team"), "notes", "D.");
    let first = {
        let cache = open(&dir);
        bind(&cache, dir.path(), &["docs", "team"]);
        rows(&catalog(&cache, &["notes"]).await)
    };
    let second = {
        // A new process's view: the cache opened again (its index now holds every entry), the
        // origins bound in the other order.
        let cache = open(&dir);
        bind(&cache, dir.path(), &["team", "docs"]);
        rows(&catalog(&cache, &["notes"]).await)
    };
    assert_eq!(first, second);
    let handles: Vec<&str> = first.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        handles,
        [
            "docs:refunds",
            "team:skill://billing/refunds",
            "team:notes",
            "team:skill://support/refunds",
        ]
    );
}

#[tokio::test]
async fn q1_an_origin_that_fails_to_list_hides_no_other_origin_and_a_refused_entry_is_reported() {
    let dir = common::scratch();
    skill_at(&dir.path().join("docs"), "refunds", "A.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["docs"]);
    // A server that cannot even start.
    cache.connect(
        origin("broken"),
        Arc::new(McpSource::stdio(tokio::process::Command::new(
            dir.path().join("no-such-server"),
        ))),
    );
    // A server whose one entry breaks a rule (an upper-case digest), beside a good one.
    let double = Arc::new(Double::new());
    let (good, files) = common::skill("notes", &[]);
    double.publish(&good, &files);
    let mut bad = good.to_json();
    bad["uri"] = json!("skill://bad/SKILL.md");
    bad["frontmatter"]["name"] = json!("bad");
    bad["resources"] = json!([{"uri": "skill://bad/SKILL.md", "digest": format!("sha256:{}", "A".repeat(64)), "size": 1}]);
    double.publish_json("skill://bad/SKILL.md", bad);
    cache.connect(origin("lying"), double);

    let c = catalog(&cache, &[]).await;
    let handles: Vec<&str> = c.skills().iter().map(CatalogSkill::handle).collect();
    assert_eq!(
        handles,
        ["refunds", "notes"],
        "both healthy origins are listed"
    );
    let failed: Vec<(&str, String)> = c
        .failures()
        .iter()
        .map(|(o, e)| (o.as_str(), e.to_string()))
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].0, "broken");
    assert_eq!(failed[1].0, "lying");
    assert!(failed[1].1.contains("skill://bad/SKILL.md"), "{failed:?}");
}

// ---- the CLI, through the real `skillcache serve` ------------------------------------------

/// An MCP config whose servers are `skillcache serve` over `home/<label>`.
fn config(env: &Env, labels: &[&str]) -> std::path::PathBuf {
    let servers: serde_json::Map<String, Value> = labels
        .iter()
        .map(|l| {
            (
                (*l).to_owned(),
                json!({"command": bin(), "args": ["serve", env.path(l)]}),
            )
        })
        .collect();
    let path = env.path("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).expect("write config");
    path
}

/// (origin, handle, the handles it collides with joined by spaces) of every skill of a
/// `list --all --json`.
fn json_handles(v: &Value) -> Vec<(String, String, String)> {
    let mut seen = Vec::new();
    for o in v["origins"].as_array().expect("origins") {
        for s in o["skills"].as_array().expect("skills") {
            let collides: Vec<&str> = s["collides_with"]
                .as_array()
                .expect("collides_with")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            seen.push((
                o["origin"].as_str().expect("origin").to_owned(),
                s["handle"].as_str().expect("handle").to_owned(),
                collides.join(" "),
            ));
        }
    }
    seen
}

fn run(env: &Env, args: &[&str]) -> std::process::Output {
    let mut cli = env.cli();
    cli.args(args);
    common::within(DEADLINE, move || cli.output().expect("run skillcache"))
        .expect("the command ends within the deadline")
}

/// The handles `q1_cli_list_all_shows_handles_and_reports_every_collision_through_serve`
/// expects: (origin, handle, the handles it collides with).
fn want_handles() -> Vec<(String, String, String)> {
    let want = [
        (
            "docs",
            "docs:skill://acme/billing/refunds",
            "docs:skill://acme/support/refunds team:refunds",
        ),
        (
            "docs",
            "docs:skill://acme/support/refunds",
            "docs:skill://acme/billing/refunds team:refunds",
        ),
        ("docs", "docs:code-review", "code-review"),
        ("team", "team:notes", "notes"),
        (
            "team",
            "team:refunds",
            "docs:skill://acme/billing/refunds docs:skill://acme/support/refunds",
        ),
    ];
    want.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[test]
fn q1_cli_list_all_shows_handles_and_reports_every_collision_through_serve() {
    let env = Env::keyed();
    skill_at(&env.path("docs"), "acme/billing/refunds", "A.");
    skill_at(&env.path("docs"), "acme/support/refunds", "B.");
    skill_at(&env.path("docs"), "code-review", "C.");
    skill_at(&env.path("team"), "refunds", "D.");
    skill_at(&env.path("team"), "notes", "E.");
    let cfg = config(&env, &["docs", "team"]);
    let cfg = cfg.to_str().expect("utf-8");
    std::fs::write(
        env.path("local.txt"),
        "# the host's own skills\ncode-review\n\n",
    )
    .expect("write");
    let local = env.path("local.txt");
    let args = [
        "list",
        "--config",
        cfg,
        "--json",
        "--all",
        "--local-names",
        "deploy,notes",
        "--local-names-file",
        local.to_str().expect("utf-8"),
    ];
    let out = run(&env, &args);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let seen = json_handles(&v);
    let want = want_handles();
    assert_eq!(seen, want);
    let names: Vec<&str> = v["collisions"]
        .as_array()
        .expect("collisions")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["code-review", "notes", "refunds"]);

    // A second run (the entries now come from a warm index) gives the same handles.
    let again = run(&env, &args);
    let again: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(json_handles(&again), seen);

    // For a person: the handle column, and a notice naming every party of each collision.
    let human = run(
        &env,
        &["list", "--config", cfg, "--all", "--local-names", "notes"],
    );
    let text = String::from_utf8_lossy(&human.stdout);
    let notice = String::from_utf8_lossy(&human.stderr);
    assert!(text.contains("HANDLE"), "{text}");
    assert!(text.contains("team:notes"), "{text}");
    assert!(
        notice.contains("\"notes\": notes (local skill), team:notes"),
        "{notice}"
    );
    assert!(
        notice.contains(
            "docs:skill://acme/billing/refunds, docs:skill://acme/support/refunds, team:refunds"
        ),
        "{notice}"
    );
}

#[test]
fn q1_cli_a_local_names_file_that_is_a_fifo_or_a_bad_name_is_refused_at_once() {
    let env = Env::keyed();
    skill_at(&env.path("docs"), "refunds", "A.");
    let cfg = config(&env, &["docs"]);
    let cfg = cfg.to_str().expect("utf-8");
    let fifo = env.path("names.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
    let out = run(
        &env,
        &[
            "list",
            "--config",
            cfg,
            "--all",
            "--local-names-file",
            fifo.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    let out = run(
        &env,
        &[
            "list",
            "--config",
            cfg,
            "--all",
            "--local-names",
            "docs:refunds",
        ],
    );
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("local skill name"));
}

/// R-E4 (found in review): `--local-names-file` linked to a secrets file is refused naming the
/// line, never quoting it — by the human and the `--json` runs alike.
#[test]
fn e4_a_local_names_file_linked_to_a_secrets_file_never_prints_the_secret() {
    let env = Env::keyed();
    skill_at(&env.path("docs"), "refunds", "A.");
    let cfg = config(&env, &["docs"]);
    let cfg = cfg.to_str().expect("utf-8");
    let secrets = env.path("secrets.env");
    std::fs::write(
        &secrets,
        "# deploy\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    )
    .expect("write");
    let names = env.path("names.txt");
    std::os::unix::fs::symlink(&secrets, &names).expect("symlink");
    for json in [false, true] {
        let mut args = vec!["list", "--config", cfg];
        if json {
            args.push("--json");
        }
        args.extend([
            "--all",
            "--local-names-file",
            names.to_str().expect("utf-8"),
        ]);
        let out = run(&env, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(code(&out), 2, "{stderr}");
        assert!(stderr.contains("line 2"), "names the line: {stderr}");
        for part in ["AWS_SECRET", "wJalrXUtnFEMI", "EXAMPLEKEY"] {
            assert!(
                !stderr.contains(part) && !stdout.contains(part),
                "json={json}: the secret is never printed: {stderr}{stdout}"
            );
        }
    }
}

// ---- round 4: collisions a person would see (K8) -------------------------------------------

#[tokio::test]
async fn k8_a_local_skill_differing_only_in_case_or_unicode_form_collides() {
    let dir = common::scratch();
    skill_at(&dir.path().join("docs"), "deploy", "Remote deploy.");
    skill_at(&dir.path().join("docs"), "kelvin", "Remote kelvin.");
    skill_at(&dir.path().join("docs"), "refunds", "Refunds.");
    let cache = open(&dir);
    bind(&cache, dir.path(), &["docs"]);
    // `Deploy`, and `Kelvin` spelled with U+212A KELVIN SIGN (NFKC: `K`).
    let c = catalog(&cache, &["Deploy", "\u{212A}elvin"]).await;
    assert_eq!(
        rows(&c)
            .into_iter()
            .map(|(handle, _, _, collides)| (handle, collides))
            .collect::<Vec<_>>(),
        [
            ("docs:deploy".to_owned(), vec!["Deploy".to_owned()]),
            ("docs:kelvin".to_owned(), vec!["\u{212A}elvin".to_owned()]),
            ("refunds".to_owned(), vec![]),
        ]
    );
    assert!(
        c.get("deploy").is_none(),
        "no bare handle a person reads as the local skill"
    );
}

#[test]
fn k8_cli_list_all_reports_a_local_name_that_differs_only_in_case() {
    let env = Env::keyed();
    skill_at(&env.path("docs"), "deploy", "A.");
    let cfg = config(&env, &["docs"]);
    let cfg = cfg.to_str().expect("utf-8");
    let out = run(
        &env,
        &[
            "list",
            "--config",
            cfg,
            "--json",
            "--all",
            "--local-names",
            "Deploy",
        ],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        json_handles(&v),
        [(
            "docs".to_owned(),
            "docs:deploy".to_owned(),
            "Deploy".to_owned()
        )]
    );
    assert_eq!(
        v["collisions"],
        json!([{"name": "deploy", "local": true, "handles": ["Deploy", "docs:deploy"], "local_handles": ["Deploy"]}])
    );
    let human = run(
        &env,
        &["list", "--config", cfg, "--all", "--local-names", "Deploy"],
    );
    let notice = String::from_utf8_lossy(&human.stderr);
    assert!(
        notice.contains("\"deploy\": Deploy (local skill), docs:deploy"),
        "{notice}"
    );
}
