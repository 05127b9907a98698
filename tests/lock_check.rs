//! The lock as a gate (issue 42, L1): `SkillCache::check_lock` asks each pinned origin for its
//! listing — never a file — and names every way it differs from the lock: a byte changed, a file
//! added or removed, a skill added or removed, an entry refused, a server gone.

mod common;

use std::sync::Arc;

use common::double::Double;
use skillcache::source::McpSource;
use skillcache::{
    ApprovalPolicy, Digest, LockCheck, LockDrift, LockFile, Origin, SkillCache, SkillEntry,
};

struct Fixture {
    dir: common::Scratch,
    origin: Origin,
    double: Arc<Double>,
    cache: SkillCache,
}

impl Fixture {
    /// `notes` (SKILL.md, a template, a checklist) and `deploy` (SKILL.md), published and
    /// pinned.
    fn pinned() -> (Fixture, LockFile) {
        let dir = common::scratch();
        let double = Arc::new(Double::new());
        let origin = Origin::new("docs").expect("origin");
        let cache = SkillCache::builder()
            .root(dir.path().join("root"))
            .key_file(dir.path().join("host.key"))
            .approval(ApprovalPolicy::NotRequired)
            .open()
            .expect("open");
        cache.connect(origin.clone(), double.clone());
        let mut lock = LockFile::new();
        for (entry, files) in [notes(b"template v1", true), common::skill("deploy", &[])] {
            double.publish(&entry, &files);
            lock.insert(&origin, &entry).expect("pinned");
        }
        let f = Fixture {
            dir,
            origin,
            double,
            cache,
        };
        (f, lock)
    }

    async fn check(&self, lock: &LockFile) -> LockCheck {
        let reads = self.double.reads();
        let check = self.cache.check_lock(lock).await;
        assert_eq!(self.double.reads(), reads, "a lock check fetches no file");
        check
    }
}

fn notes(template: &[u8], checklist: bool) -> (SkillEntry, common::Files) {
    let mut files: Vec<(&str, &[u8])> = vec![("templates/a.md", template)];
    if checklist {
        files.push(("checklist.md", b"check"));
    }
    common::skill("notes", &files)
}

fn texts(check: &LockCheck) -> Vec<String> {
    check.drift.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn l1_a_lock_of_every_listed_skill_checks_clean_without_fetching_a_file() {
    let (f, lock) = Fixture::pinned();
    let check = f.check(&lock).await;
    assert!(check.is_clean(), "{:?}", texts(&check));
    assert_eq!((check.pinned, check.matched), (2, 2));
}

#[tokio::test]
async fn l1_a_changed_byte_is_named_with_its_old_and_new_digest_and_size() {
    let (f, lock) = Fixture::pinned();
    let (entry, files) = notes(b"template v2!", true);
    f.double.publish(&entry, &files);
    let check = f.check(&lock).await;
    let [LockDrift::Files { skill, files, .. }] = &check.drift[..] else {
        panic!("one skill drifted: {:?}", texts(&check));
    };
    assert_eq!(skill.as_str(), "skill://notes/SKILL.md");
    assert_eq!(files.len(), 1, "only the template changed");
    assert_eq!(files[0].uri.as_str(), "skill://notes/templates/a.md");
    assert_eq!(files[0].pinned, Some((Digest::of(b"template v1"), 11)));
    assert_eq!(files[0].now, Some((Digest::of(b"template v2!"), 12)));
    let text = &texts(&check)[0];
    assert!(
        text.contains(&format!(
            "changed: {} (11 bytes) -> {} (12 bytes)",
            Digest::of(b"template v1"),
            Digest::of(b"template v2!")
        )),
        "{text}"
    );
    assert_eq!(check.matched, 1, "deploy still matches");
}

#[tokio::test]
async fn l1_a_file_added_and_a_file_removed_are_each_named() {
    let (f, lock) = Fixture::pinned();
    // The checklist goes and a new file arrives.
    let (entry, files) = common::skill(
        "notes",
        &[("templates/a.md", b"template v1"), ("extra.md", b"more")],
    );
    f.double.publish(&entry, &files);
    let check = f.check(&lock).await;
    let [LockDrift::Files { files, .. }] = &check.drift[..] else {
        panic!("one skill drifted: {:?}", texts(&check));
    };
    let named: Vec<(&str, bool, bool)> = files
        .iter()
        .map(|d| (d.uri.as_str(), d.pinned.is_some(), d.now.is_some()))
        .collect();
    assert_eq!(
        named,
        [
            ("skill://notes/checklist.md", true, false),
            ("skill://notes/extra.md", false, true),
        ]
    );
    let text = &texts(&check)[0];
    assert!(
        text.contains("skill://notes/checklist.md removed (was sha256:"),
        "{text}"
    );
    assert!(
        text.contains("skill://notes/extra.md added: sha256:"),
        "{text}"
    );
}

#[tokio::test]
async fn l1_a_skill_added_is_drift_and_a_dynamic_one_is_reported_beside_it() {
    let (f, lock) = Fixture::pinned();
    let (entry, files) = common::skill("review", &[]);
    f.double.publish(&entry, &files);
    f.double.publish_json(
        "skill://live/SKILL.md",
        serde_json::json!({
            "uri": "skill://live/SKILL.md",
            "frontmatter": {"name": "live", "description": "Changes."},
            "resources": "dynamic",
        }),
    );
    let check = f.check(&lock).await;
    let [LockDrift::Added { skill, .. }] = &check.drift[..] else {
        panic!("one skill added: {:?}", texts(&check));
    };
    assert_eq!(skill.as_str(), "skill://review/SKILL.md");
    assert_eq!(check.dynamic.len(), 1, "the dynamic skill is reported");
    assert_eq!(check.dynamic[0].1.as_str(), "skill://live/SKILL.md");
    assert_eq!(check.matched, 2);
}

#[tokio::test]
async fn l1_a_skill_removed_is_drift() {
    let (f, lock) = Fixture::pinned();
    f.double.withdraw("skill://deploy/SKILL.md");
    let check = f.check(&lock).await;
    let [LockDrift::Removed { skill, origin }] = &check.drift[..] else {
        panic!("one skill removed: {:?}", texts(&check));
    };
    assert_eq!(origin, &f.origin);
    assert_eq!(skill.as_str(), "skill://deploy/SKILL.md");
    assert!(texts(&check)[0].contains("no longer listed"));
}

#[tokio::test]
async fn l1_a_pinned_skill_that_became_dynamic_is_drift() {
    let (f, lock) = Fixture::pinned();
    f.double.publish_json(
        "skill://deploy/SKILL.md",
        serde_json::json!({
            "uri": "skill://deploy/SKILL.md",
            "frontmatter": {"name": "deploy", "description": "The deploy skill."},
            "resources": "dynamic",
        }),
    );
    let check = f.check(&lock).await;
    assert!(
        matches!(&check.drift[..], [LockDrift::BecameDynamic { skill, .. }] if skill.as_str() == "skill://deploy/SKILL.md"),
        "{:?}",
        texts(&check)
    );
    assert!(
        check.dynamic.is_empty(),
        "a pinned skill is drift, not a note"
    );
}

#[tokio::test]
async fn l1_a_refused_entry_of_a_pinned_skill_is_named_as_refused_not_removed() {
    let (f, lock) = Fixture::pinned();
    f.double.publish_json(
        "skill://deploy/SKILL.md",
        serde_json::json!({
            "uri": "skill://deploy/SKILL.md",
            "frontmatter": {"name": "deploy", "description": "The deploy skill."},
            "resources": [{"uri": "skill://deploy/SKILL.md", "digest": "sha256:nothex", "size": 3}],
        }),
    );
    let check = f.check(&lock).await;
    let [LockDrift::Refused { skill, .. }] = &check.drift[..] else {
        panic!("one refusal, and no removal: {:?}", texts(&check));
    };
    assert_eq!(
        skill.as_ref().map(skillcache::SkillUri::as_str),
        Some("skill://deploy/SKILL.md")
    );
}

#[tokio::test]
async fn l1_an_edited_binding_in_the_lock_is_drift() {
    let (f, lock) = Fixture::pinned();
    let path = f.dir.path().join("skills.lock");
    lock.write(&path).expect("written");
    let text = std::fs::read_to_string(&path).expect("read");
    let pinned = lock
        .skills()
        .find(|s| s.uri().as_str() == "skill://deploy/SKILL.md")
        .expect("deploy pinned")
        .binding()
        .to_string();
    let forged = "0".repeat(64);
    assert_ne!(pinned, forged);
    std::fs::write(&path, text.replace(&pinned, &forged)).expect("edited");
    let edited = LockFile::read(&path).expect("still a lock");
    let check = f.check(&edited).await;
    assert!(
        matches!(&check.drift[..], [LockDrift::Binding { skill, .. }] if skill.as_str() == "skill://deploy/SKILL.md"),
        "{:?}",
        texts(&check)
    );
    assert!(texts(&check)[0].contains("the lock was edited"));
}

#[tokio::test]
async fn l1_a_server_gone_and_an_origin_not_connected_are_drift_not_errors() {
    let (f, mut lock) = Fixture::pinned();
    // A second origin whose server exits before answering, and a third never connected.
    let (gone, absent) = (
        Origin::new("gone").expect("o"),
        Origin::new("absent").expect("o"),
    );
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "exit 3"]);
    f.cache
        .connect(gone.clone(), Arc::new(McpSource::stdio(command)));
    let (entry, _) = common::skill("deploy", &[]);
    lock.insert(&gone, &entry).expect("pinned");
    lock.insert(&absent, &entry).expect("pinned");
    let check = f.check(&lock).await;
    let unlisted: Vec<&str> = check
        .drift
        .iter()
        .map(|d| match d {
            LockDrift::Unlisted { origin, .. } => origin.as_str(),
            other => panic!("only the two origins drift: {other}"),
        })
        .collect();
    // In the lock's order: by origin.
    assert_eq!(unlisted, ["absent", "gone"]);
    assert_eq!((check.pinned, check.matched), (4, 2), "docs still matches");
    for text in texts(&check) {
        assert!(text.contains("could not be listed: "), "{text}");
    }
}
