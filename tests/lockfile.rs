//! The lock file (issue 13, item 3) through the host API: `LockFile` written and read back as
//! TOML, and the `Locked` policy (`SkillCacheBuilder::locked`) that declines, before any
//! `resources/read`, a skill the lock does not list or whose files drifted — naming every file
//! added, removed or changed.

mod common;

use std::sync::Arc;

use common::double::Double;
use skillcache::error::{Declined, FileProblem};
use skillcache::{ApprovalPolicy, Error, LockFile, Origin, SkillCache, SkillEntry};

struct Fixture {
    dir: common::Scratch,
    origin: Origin,
    double: Arc<Double>,
}

impl Fixture {
    fn new() -> Fixture {
        let double = Arc::new(Double::new());
        Fixture {
            dir: common::scratch(),
            origin: Origin::new("docs").expect("origin"),
            double,
        }
    }

    fn cache(&self, lock: Option<LockFile>) -> SkillCache {
        let mut b = SkillCache::builder()
            .root(self.dir.path().join("root"))
            .key_file(self.dir.path().join("host.key"))
            .approval(ApprovalPolicy::NotRequired);
        if let Some(lock) = lock {
            b = b.locked(lock);
        }
        let cache = b.open().expect("open");
        cache.connect(self.origin.clone(), self.double.clone());
        cache
    }

    fn lock_path(&self) -> std::path::PathBuf {
        self.dir.path().join("skills.lock")
    }
}

/// `notes` as first published: a template, a checklist and the SKILL.md.
fn v1() -> (SkillEntry, common::Files) {
    common::skill(
        "notes",
        &[
            ("templates/a.md", b"template v1"),
            ("checklist.md", b"check"),
        ],
    )
}

fn declined(r: Result<skillcache::LoadedSkill, Error>) -> (String, String, Declined) {
    match r {
        Err(Error::Declined {
            origin,
            skill,
            reason,
        }) => (
            origin.as_str().to_owned(),
            skill.as_str().to_owned(),
            reason,
        ),
        other => panic!("expected a decline, got {other:?}"),
    }
}

#[tokio::test]
async fn a_lock_round_trips_through_toml_and_admits_the_skill_it_pins() {
    let f = Fixture::new();
    let (entry, files) = v1();
    f.double.publish(&entry, &files);
    let mut lock = LockFile::new();
    lock.insert(&f.origin, &entry).expect("pinned");
    lock.write(f.lock_path()).expect("written");

    let text = std::fs::read_to_string(f.lock_path()).expect("read");
    for needle in [
        "origin = \"docs\"",
        "uri = \"skill://notes/SKILL.md\"",
        "uri = \"skill://notes/templates/a.md\"",
        "size = 11",
        &format!("binding = \"{}\"", entry.binding().expect("binding")),
        &format!("digest = \"{}\"", skillcache::Digest::of(b"template v1")),
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
    let read = LockFile::read(f.lock_path()).expect("reads back");
    assert_eq!(read, {
        let mut again = LockFile::parse(f.lock_path(), &text).expect("parses");
        again.insert(&f.origin, &entry).expect("same pin");
        again
    });
    let pinned = read.skill(&f.origin, entry.uri()).expect("listed");
    assert_eq!(pinned.files().count(), 3);
    assert_eq!(Some(pinned.binding()), entry.binding());

    let cache = f.cache(Some(read));
    let info = cache.entry(&f.origin, entry.uri()).await.expect("entry");
    let skill = cache.load(&f.origin, &info.entry).await.expect("as pinned");
    assert_eq!(skill.read_all().await.expect("files").len(), 3);
}

#[tokio::test]
async fn a_locked_load_declines_drift_naming_every_file_before_any_read() {
    let f = Fixture::new();
    let (entry, files) = v1();
    f.double.publish(&entry, &files);
    let mut lock = LockFile::new();
    lock.insert(&f.origin, &entry).expect("pinned");

    // The server changes the skill: one file changed, one removed, one added.
    let (v2, v2_files) = common::skill(
        "notes",
        &[("templates/a.md", b"template v2!"), ("extra.md", b"new")],
    );
    f.double.publish(&v2, &v2_files);
    let cache = f.cache(Some(lock));
    let info = cache.refresh(&f.origin, v2.uri()).await.expect("entry");
    let reads = f.double.reads();
    let (origin, skill, reason) = declined(cache.load(&f.origin, &info.entry).await);
    assert_eq!(
        (origin.as_str(), skill.as_str()),
        ("docs", "skill://notes/SKILL.md")
    );
    let Declined::Drift { changes } = reason else {
        panic!("expected drift, got {reason:?}");
    };
    let names =
        |v: &[skillcache::FileUri]| v.iter().map(|u| u.as_str().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&changes.added), ["skill://notes/extra.md"]);
    assert_eq!(names(&changes.removed), ["skill://notes/checklist.md"]);
    assert_eq!(changes.changed.len(), 1);
    assert_eq!(
        changes.changed[0].uri.as_str(),
        "skill://notes/templates/a.md"
    );
    assert_eq!(
        changes.changed[0].old,
        skillcache::Digest::of(b"template v1")
    );
    assert_eq!(
        changes.changed[0].new,
        skillcache::Digest::of(b"template v2!")
    );
    assert_eq!(
        f.double.reads(),
        reads,
        "declined before any resources/read"
    );
    let e = cache
        .load(&f.origin, &info.entry)
        .await
        .expect_err("still declined");
    let text = e.to_string();
    for file in ["extra.md", "checklist.md", "templates/a.md"] {
        assert!(text.contains(file), "{file} named in: {text}");
    }
    assert!(matches!(e, Error::Declined { .. }), "{e:?}");
}

#[tokio::test]
async fn a_locked_load_declines_a_skill_the_lock_does_not_list() {
    let f = Fixture::new();
    let (entry, files) = v1();
    f.double.publish(&entry, &files);
    let (other, other_files) = common::skill("other", &[]);
    f.double.publish(&other, &other_files);
    let mut lock = LockFile::new();
    lock.insert(&f.origin, &entry).expect("pinned");
    let cache = f.cache(Some(lock.clone()));
    let info = cache.entry(&f.origin, other.uri()).await.expect("entry");
    let (_, skill, reason) = declined(cache.load(&f.origin, &info.entry).await);
    assert_eq!(
        (skill.as_str(), reason),
        ("skill://other/SKILL.md", Declined::NotLocked)
    );
    assert_eq!(f.double.reads(), 0);
    // The same skill pinned under another origin does not count for this one.
    let elsewhere = Origin::new("elsewhere").expect("origin");
    assert!(matches!(
        lock.check(&elsewhere, &entry),
        Err(Error::Declined {
            reason: Declined::NotLocked,
            ..
        })
    ));
    lock.check(&f.origin, &entry)
        .expect("pinned under its own origin");
}

#[test]
fn a_dynamic_skill_cannot_be_locked() {
    let dynamic = SkillEntry::from_json(
        &serde_json::json!({
            "uri": "skill://live/SKILL.md",
            "frontmatter": {"name": "live", "description": "Changes."},
            "resources": "dynamic",
        }),
        &skillcache::entry::Validation::default(),
    )
    .expect("valid dynamic entry");
    let origin = Origin::new("docs").expect("origin");
    let e = LockFile::new()
        .insert(&origin, &dynamic)
        .expect_err("no digests to pin");
    assert!(matches!(
        e,
        Error::Declined {
            reason: Declined::Dynamic,
            ..
        }
    ));
    // And a lock never admits one.
    let (entry, _) = v1();
    let mut lock = LockFile::new();
    lock.insert(&origin, &entry).expect("pinned");
    let as_dynamic = SkillEntry::from_json(
        &serde_json::json!({
            "uri": "skill://notes/SKILL.md",
            "frontmatter": {"name": "notes", "description": "The notes skill."},
            "resources": "dynamic",
        }),
        &skillcache::entry::Validation::default(),
    )
    .expect("valid");
    let Err(Error::Declined {
        reason: Declined::Drift { changes },
        ..
    }) = lock.check(&origin, &as_dynamic)
    else {
        panic!("a skill that turned dynamic drifted");
    };
    assert!(changes.dynamic_changed);
}

#[test]
fn a_hand_edited_lock_is_refused_naming_the_path_and_the_field() {
    let dir = common::scratch();
    let path = dir.path().join("skills.lock");
    let origin = Origin::new("docs").expect("origin");
    let (entry, _) = v1();
    let mut lock = LockFile::new();
    lock.insert(&origin, &entry).expect("pinned");
    lock.write(&path).expect("written");
    let text = std::fs::read_to_string(&path).expect("read");

    // A digest that is not one.
    let edited = text.replacen("digest = \"sha256:", "digest = \"sha1:", 1);
    std::fs::write(&path, &edited).expect("edit");
    let Err(Error::Config(skillcache::error::ConfigError::LockFile {
        path: named,
        field,
        position,
        problem,
    })) = LockFile::read(&path)
    else {
        panic!("refused");
    };
    assert_eq!(named, path);
    assert_eq!(field, "skill[0].file[0].digest");
    // R-E4: the line and column of the value, counted in the file as written.
    let line = edited
        .lines()
        .position(|l| l.starts_with("digest = \"sha1:"))
        .expect("the edited line");
    assert_eq!(position, Some((line + 1, 10)));
    assert!(
        matches!(problem, FileProblem::Invalid { .. }),
        "{problem:?}"
    );

    // A binding that does not match the pinned files: the pins agree, the binding does not.
    let binding = entry.binding().expect("binding").to_string();
    std::fs::write(&path, text.replace(&binding, &"0".repeat(64))).expect("edit");
    let edited = LockFile::read(&path).expect("well-formed");
    let e = edited.check(&origin, &entry).expect_err("inconsistent");
    assert!(
        matches!(&e, Error::Config(skillcache::error::ConfigError::LockFile { path: p, .. }) if *p == path),
        "{e:?}"
    );

    // Not TOML at all.
    std::fs::write(&path, "version = [").expect("edit");
    let e = LockFile::read(&path).expect_err("refused");
    assert!(
        matches!(
            &e,
            Error::Config(skillcache::error::ConfigError::LockFile {
                problem: FileProblem::Syntax { .. },
                ..
            })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn l1_a_lock_or_config_file_too_large_or_not_utf8_is_refused_naming_the_path() {
    // R-L1: a lock (or an MCP config) is read without trusting its size, so a huge file (or
    // `/dev/zero`) costs bounded memory; a file that is not UTF-8 is a refused file (exit 2),
    // not an I/O failure. Sparse files: nothing large is written to disk.
    let dir = common::scratch();
    let big = |name: &str, len: u64| {
        let p = dir.path().join(name);
        std::fs::File::create(&p)
            .and_then(|f| f.set_len(len))
            .expect("sparse file");
        p
    };
    let lock = big("huge.lock", (16 << 20) + 1);
    match LockFile::read(&lock) {
        Err(Error::Config(skillcache::error::ConfigError::LockFile {
            path,
            field,
            problem: FileProblem::Invalid { why },
            ..
        })) => {
            assert_eq!((path, field.as_str()), (lock, ""));
            assert!(why.contains("larger than"), "{why}");
        }
        other => panic!("expected a refusal for its size, got {other:?}"),
    }
    let config = big("huge.json", (16 << 20) + 1);
    match skillcache::McpConfig::read(&config) {
        Err(Error::Config(skillcache::error::ConfigError::File {
            path,
            problem: FileProblem::Invalid { why },
            ..
        })) => {
            assert_eq!(path, config);
            assert!(why.contains("larger than"), "{why}");
        }
        other => panic!("expected a refusal for its size, got {other:?}"),
    }

    // A long line is quoted by the TOML parser: the error stays small.
    let long = dir.path().join("long.lock");
    std::fs::write(&long, format!("version = 1\n{}\n", "x".repeat(1 << 20))).expect("write");
    let message = LockFile::read(&long).expect_err("refused").to_string();
    assert!(message.len() < 4096, "{} bytes", message.len());

    let latin1 = dir.path().join("latin1.lock");
    std::fs::write(&latin1, b"version = 1\n# caf\xe9\n").expect("write");
    assert!(
        matches!(
            LockFile::read(&latin1),
            Err(Error::Config(skillcache::error::ConfigError::LockFile {
                problem: FileProblem::Syntax { .. },
                ..
            }))
        ),
        "{:?}",
        LockFile::read(&latin1)
    );
    let latin1 = dir.path().join("latin1.json");
    std::fs::write(
        &latin1,
        b"{\"mcpServers\": {\"caf\xe9\": {\"command\": \"x\"}}}",
    )
    .expect("write");
    assert!(
        matches!(
            skillcache::McpConfig::read(&latin1),
            Err(Error::Config(skillcache::error::ConfigError::File {
                problem: FileProblem::Syntax { .. },
                ..
            }))
        ),
        "{:?}",
        skillcache::McpConfig::read(&latin1)
    );
}

#[test]
fn l1_a_deeply_nested_lock_is_refused_not_a_stack_overflow() {
    // Tried in review; it held (the TOML parser bounds its depth): kept as a guard.
    let dir = common::scratch();
    let path = dir.path().join("nested.lock");
    let depth = 100_000;
    let text = format!(
        "version = 1\nx = {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    std::fs::write(&path, text).expect("write");
    assert!(
        matches!(
            LockFile::read(&path),
            Err(Error::Config(
                skillcache::error::ConfigError::LockFile { .. }
            ))
        ),
        "refused"
    );
}

#[test]
fn l1_writing_a_lock_never_writes_through_a_planted_temporary() {
    // A repository can carry a symlink where `lock` puts its temporary (`skills.lock.tmp`):
    // writing the lock must not follow it and clobber the file it points to.
    let dir = common::scratch();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").expect("write");
    let path = dir.path().join("skills.lock");
    std::os::unix::fs::symlink(&victim, dir.path().join("skills.lock.tmp")).expect("symlink");

    LockFile::new().write(&path).expect("written");

    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "precious\n"
    );
    assert!(
        std::fs::symlink_metadata(&path).expect("lock").is_file(),
        "the lock is a regular file of its own"
    );
    assert_eq!(LockFile::read(&path).expect("reads").skills().count(), 0);
}

#[test]
fn e5_a_written_lock_shows_every_hidden_character_as_an_escape_and_reads_back_the_same() {
    // A reviewer reads `skills.lock` in a diff: a URI with a bidi override, a zero-width space
    // or a C1 control must not look like another one there. The lock writes them as TOML
    // escapes; the value read back is the URI itself.
    let dir = common::scratch();
    let path = dir.path().join("skills.lock");
    let md = b"---\nname: notes\ndescription: Notes.\n---\n";
    let hostile = "skill://notes/refs/\u{202e}gpj.md\u{200b}\u{9b}\"";
    let entry = SkillEntry::from_json(
        &serde_json::json!({
            "uri": "skill://notes/SKILL.md",
            "frontmatter": {"name": "notes", "description": "Notes."},
            "resources": [
                {"uri": "skill://notes/SKILL.md", "digest": skillcache::Digest::of(md).to_string(), "size": md.len()},
                {"uri": hostile, "digest": skillcache::Digest::of(b"x").to_string(), "size": 1},
            ]
        }),
        &skillcache::entry::Validation::default(),
    )
    .expect("a valid entry");
    let origin = Origin::new("docs").expect("origin");
    let mut lock = LockFile::new();
    lock.insert(&origin, &entry).expect("pinned");
    lock.write(&path).expect("written");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(
        !text.contains(['\u{202e}', '\u{200b}', '\u{9b}']),
        "hidden characters written raw:\n{text}"
    );
    assert!(
        text.contains(r#"uri = "skill://notes/refs/\u202Egpj.md\u200B\u009B\"""#),
        "{text}"
    );
    let read = LockFile::read(&path).expect("reads back");
    read.check(&origin, &entry).expect("the same pins");
    assert!(
        read.skills()
            .flat_map(|s| s
                .files()
                .map(|(u, _, _)| u.as_str().to_owned())
                .collect::<Vec<_>>())
            .any(|u| u == hostile)
    );
}
