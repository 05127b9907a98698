//! B5: the bindings' shared error table (`skillcache-binding`) maps every kind of error and
//! every decline reason the library has, lists exactly what it maps, and every message it gives
//! a binding is display-safe, carries its cause chain and names no Rust type (U1).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use skillcache::entry::EntryDiff;
use skillcache::error::{
    ConfigError, Declined, EntryError, FileProblem, FrontmatterProblem, IndexError, KeyProblem,
    Limit, Mismatch, OfflineMiss, Rule, SourceError, StoreError, UriError, VerifyError,
};
use skillcache::{Digest, Error, FileUri, Origin, SkillUri};
use skillcache_binding::options::{Case, Number, Spelling, choice, count, limits};
use skillcache_binding::report::{
    CLASSES, DECLINE_REASONS, Field, KINDS, MISMATCHES, OFFLINE_MISSES, report,
};

fn origin() -> Origin {
    Origin::new("docs").expect("label")
}

fn skill() -> SkillUri {
    SkillUri::parse("skill://notes/SKILL.md").expect("uri")
}

fn file() -> FileUri {
    FileUri::parse("skill://notes/SKILL.md").expect("uri")
}

fn io() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::PermissionDenied)
}

/// One error of each kind of the URI, entry and source layers.
fn entry_and_source_errors() -> Vec<Error> {
    let p = || PathBuf::from("/cache/root");
    vec![
        Error::Uri(UriError {
            uri: "nope".into(),
            rule: Rule::Missing,
        }),
        EntryError::Digest {
            text: "x".into(),
            rule: Rule::DigestPrefix,
        }
        .into(),
        EntryError::Invalid {
            origin: Some(origin()),
            skill: Some("skill://notes/SKILL.md".into()),
            field: "name".into(),
            rule: Rule::Missing,
        }
        .into(),
        EntryError::LimitExceeded {
            origin: Some(origin()),
            skill: skill(),
            limit: Limit::Files,
            declared: 9000,
            max: 512,
        }
        .into(),
        EntryError::Response {
            origin: None,
            method: "skills/list",
            rule: Rule::Missing,
        }
        .into(),
        Error::from(FrontmatterProblem::NoOpening),
        EntryError::Folder {
            path: p(),
            why: "is not a folder",
        }
        .into(),
        SourceError::Server {
            origin: Some(origin()),
            uri: None,
            method: "skills/get".into(),
            code: -32602,
            message: "\x1b]0;pwned\x07".repeat(10_000),
        }
        .into(),
        SourceError::Transport {
            origin: Some(origin()),
            method: "initialize".into(),
            source: "cannot connect to http://127.0.0.1:9/mcp: connection refused".into(),
        }
        .into(),
        SourceError::Timeout {
            origin: origin(),
            method: "skills/get".into(),
            after: Duration::from_secs(30),
        }
        .into(),
        SourceError::MessageTooLarge {
            origin: Some(origin()),
            method: "resources/read".into(),
            max: 1024,
        }
        .into(),
        SourceError::NotConnected { origin: origin() }.into(),
    ]
}

/// One error of each kind of the store, index and configuration.
fn store_index_config_errors() -> Vec<Error> {
    let p = || PathBuf::from("/cache/root");
    vec![
        StoreError::RootRefused {
            root: p(),
            why: "is writable by others",
            path: p(),
        }
        .into(),
        StoreError::Io {
            op: "open",
            path: p(),
            source: io(),
        }
        .into(),
        StoreError::LockTimeout {
            path: p(),
            waited: Duration::from_secs(5),
            holder: Some("pid 1".into()),
        }
        .into(),
        IndexError::Database {
            what: "open",
            source: "disk I/O error".into(),
        }
        .into(),
        IndexError::TooNew {
            found: 9,
            supported: 1,
        }
        .into(),
        IndexError::ReadOnly {
            path: p(),
            what: "record",
        }
        .into(),
        IndexError::Io {
            op: "rename",
            path: p(),
            source: io(),
        }
        .into(),
        IndexError::HostKey {
            path: PathBuf::from("/home/u/host.key"),
            problem: KeyProblem::NotARegularFile,
        }
        .into(),
        ConfigError::Invalid { what: "x".into() }.into(),
        ConfigError::File {
            path: p(),
            field: "mcpServers".into(),
            position: Some((1, 2)),
            problem: FileProblem::Missing,
        }
        .into(),
        ConfigError::LockFile {
            path: p(),
            field: "skill[0]".into(),
            position: None,
            problem: FileProblem::Missing,
        }
        .into(),
        Error::L2Config {
            location: "s4://x".into(),
            problem: "no such store".into(),
            source: None,
        },
    ]
}

/// One error of every kind, every decline reason, offline miss and mismatch.
fn every_error() -> Vec<Error> {
    let mut all = entry_and_source_errors();
    all.extend(store_index_config_errors());
    let changes = || Box::new(EntryDiff::default());
    for reason in [
        Declined::Dynamic,
        Declined::NotApproved,
        Declined::Revoked { changes: changes() },
        Declined::NotLocked,
        Declined::Drift { changes: changes() },
        Declined::OverQuota {
            quota: 10,
            size: 20,
        },
    ] {
        all.push(Error::Declined {
            origin: origin(),
            skill: skill(),
            reason,
        });
    }
    for missing in [
        OfflineMiss::Entry,
        OfflineMiss::Stale { age_ms: 5000 },
        OfflineMiss::File,
        OfflineMiss::Server {
            method: "skills/list",
        },
    ] {
        all.push(Error::Offline {
            origin: origin(),
            uri: Some(file()),
            missing,
        });
    }
    let (a, b) = (Digest::of(b"a"), Digest::of(b"b"));
    for mismatch in [
        Mismatch::Size {
            expected: 1,
            actual: 2,
        },
        Mismatch::Digest {
            expected: a,
            actual: b,
        },
        Mismatch::Frontmatter { diffs: Vec::new() },
        Mismatch::FrontmatterUnreadable {
            problem: FrontmatterProblem::NoClosing,
        },
        Mismatch::Unlisted,
        Mismatch::NotARegularFile,
    ] {
        all.push(
            StoreError::BlobMismatch {
                origin: origin(),
                digest: a,
                mismatch: mismatch.clone(),
            }
            .into(),
        );
        all.push(Error::Verify(VerifyError {
            origin: origin(),
            uri: file(),
            mismatch,
        }));
    }
    all
}

fn text_of(report: &skillcache_binding::report::Report, name: &str) -> Option<String> {
    report.fields.iter().find_map(|(n, v)| match v {
        Field::Str(s) if *n == name => Some(s.clone()),
        _ => None,
    })
}

#[test]
fn b5_the_shared_table_maps_every_kind_and_lists_exactly_what_it_maps() {
    let mut kinds = BTreeSet::new();
    let (mut reasons, mut misses, mut mismatches) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for e in every_error() {
        let r = report(&e);
        assert!(
            KINDS.contains(&(r.class, r.kind)),
            "({}, {}) is not in KINDS",
            r.class,
            r.kind
        );
        assert!(
            CLASSES.iter().any(|(c, _)| *c == r.class),
            "{} is not in CLASSES",
            r.class
        );
        kinds.insert((r.class, r.kind));
        if let Some(reason) = text_of(&r, "reason") {
            reasons.insert(reason);
        }
        if let Some(missing) = text_of(&r, "missing") {
            misses.insert(missing);
        }
        if let Some(m) = text_of(&r, "mismatch") {
            mismatches.insert(m);
        }
    }
    let listed: BTreeSet<_> = KINDS.iter().copied().collect();
    assert_eq!(
        kinds, listed,
        "KINDS lists a kind no error produces, or misses one"
    );
    let set = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(reasons, set(DECLINE_REASONS));
    assert_eq!(misses, set(OFFLINE_MISSES));
    assert_eq!(mismatches, set(MISMATCHES));
    // Every parent a class names is a class, or the base.
    for (class, parent) in CLASSES {
        assert!(
            parent.is_none_or(|p| CLASSES.iter().any(|(c, _)| *c == p)),
            "{class} extends {parent:?}, which is no class"
        );
    }
}

#[test]
fn b2_every_message_is_display_safe_names_no_type_and_carries_its_causes() {
    for e in every_error() {
        let r = report(&e);
        assert!(
            !r.message.chars().any(char::is_control),
            "{}: a control character in {:?}",
            r.kind,
            r.message
        );
        for bad in [
            "rmcp::",
            "reqwest::",
            "skillcache::",
            "Send message error",
            "when send",
            "Some(",
        ] {
            assert!(
                !r.message.contains(bad),
                "{}: {bad:?} in {}",
                r.kind,
                r.message
            );
        }
        for cause in &r.causes {
            assert!(
                r.message.contains(cause.as_str()),
                "{}: {cause} not in {}",
                r.kind,
                r.message
            );
        }
    }
    let transport = report(&Error::Source(SourceError::Transport {
        origin: Some(origin()),
        method: "initialize".into(),
        source: "cannot connect to http://127.0.0.1:9/mcp: connection refused".into(),
    }));
    assert_eq!(
        transport.message,
        "initialize to origin docs: the connection to the server failed: cannot connect to \
         http://127.0.0.1:9/mcp: connection refused"
    );
}

#[test]
fn b2_a_servers_own_text_is_a_bounded_display_safe_field_apart_from_the_message() {
    let r = report(&Error::Source(SourceError::Server {
        origin: Some(origin()),
        uri: None,
        method: "skills/get".into(),
        code: -32602,
        message: "\x1b]0;pwned\x07\n".repeat(1_000_000),
    }));
    let text = text_of(&r, "server_message").expect("server_message");
    assert!(!text.chars().any(char::is_control), "{text:?}");
    assert!(
        text.chars().count() < 8 * 1024,
        "{} characters",
        text.chars().count()
    );
    assert!(text.starts_with(r"\x1b]0;pwned\x07\n"), "{text:?}");
    assert!(
        r.message
            .starts_with("skills/get to origin docs failed on the server: ")
    );
    assert!(!r.fields.iter().any(|(n, _)| *n == "message"));
}

// --- B5: the options both bindings read ------------------------------------------------------

fn json(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

#[test]
fn b5_a_choice_is_named_as_the_binding_spells_it() {
    let camel = Spelling {
        case: Case::Camel,
        quote: &json,
    };
    let got = choice(
        "approval",
        "notRequired",
        &[
            skillcache::ApprovalPolicy::Required,
            skillcache::ApprovalPolicy::NotRequired,
        ],
        &camel,
    );
    assert_eq!(got.ok(), Some(skillcache::ApprovalPolicy::NotRequired));
    let refused = choice(
        "dynamic",
        "never",
        &[
            skillcache::DynamicPolicy::Decline,
            skillcache::DynamicPolicy::AllowUnverified,
        ],
        &camel,
    )
    .err()
    .map(|e| e.to_string());
    assert_eq!(
        refused.as_deref(),
        Some(r#"dynamic must be one of "decline", "allowUnverified", not "never""#)
    );
    // Each binding takes its own spelling only.
    let snake = Spelling {
        case: Case::Snake,
        quote: &json,
    };
    assert!(
        choice(
            "approval",
            "notRequired",
            &[
                skillcache::ApprovalPolicy::Required,
                skillcache::ApprovalPolicy::NotRequired
            ],
            &snake
        )
        .is_err()
    );
}

#[test]
fn b5_counts_refuse_what_is_not_a_whole_number_and_limits_keep_the_baseline() {
    let s = Spelling {
        case: Case::Camel,
        quote: &json,
    };
    assert!(count("max_files", Number::Float(1.5), &s).is_err());
    assert!(count("max_files", Number::Int(-1), &s).is_err());
    assert!(count("max_files", Number::Float(f64::NAN), &s).is_err());
    assert_eq!(
        count("memory_tier", Number::Int(i128::MAX), &s).ok(),
        Some(u64::MAX)
    );
    let raised = limits(Some(Number::Int(1000)), None, &s).ok().flatten();
    assert_eq!(raised.map(|l| l.max_total_bytes()), Some(16 * 1024 * 1024));
    assert!(limits(Some(Number::Int(1)), None, &s).is_err());
}
