//! R-W1…R-W9, R-A1, R-A2: validating what a server sends.
#![allow(clippy::needless_pass_by_value, clippy::result_large_err)] // fixtures take JSON by value; helpers return the crate error

mod common;

use serde_json::{Value, json};
use skillcache::entry::{
    CacheHints, Limits, Listing, Scope, Validation, parse_get_result, parse_list_result,
    select_content,
};
use skillcache::error::{EntryError, Limit, Rule};
use skillcache::{Digest, FileUri, SkillEntry, SkillUri};

const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn res(uri: &str, size: Value) -> Value {
    json!({"uri": uri, "digest": D, "size": size})
}

fn entry_with(resources: Value) -> Value {
    json!({
        "uri": "skill://code-review/SKILL.md",
        "frontmatter": {"name": "code-review", "description": "Reviews code."},
        "resources": resources,
    })
}

fn base() -> Value {
    entry_with(json!([
        res("skill://code-review/SKILL.md", json!(0)),
        res("skill://code-review/refs/a.md", json!(10))
    ]))
}

fn validate(v: &Value) -> Result<SkillEntry, EntryError> {
    SkillEntry::from_json(v, &Validation::default())
}

/// The (field, rule) of an invalid entry; panics on anything else.
fn refusal(v: &Value) -> (String, Rule) {
    match validate(v) {
        Err(skillcache::error::EntryError::Invalid { field, rule, .. }) => (field, rule),
        other => panic!("expected InvalidEntry, got {other:?}"),
    }
}

fn with_resource(i: usize, key: &str, value: Value) -> Value {
    let mut v = base();
    v["resources"][i][key] = value;
    v
}

#[test]
fn valid_entry_is_accepted_and_round_trips() {
    let e = validate(&base()).expect("valid");
    assert_eq!(e.name(), "code-review");
    assert_eq!(e.manifest().expect("manifest").files().len(), 2);
    assert_eq!(validate(&e.to_json()).expect("re-validates"), e);
}

#[test]
fn w1_upper_case_or_malformed_digest_makes_the_entry_invalid() {
    for d in [
        D.to_uppercase(),
        D.replace("sha256:", "sha512:"),
        D[7..].to_owned(),
        format!("{D} "),
        D[..70].to_owned(),
    ] {
        let (field, rule) = refusal(&with_resource(1, "digest", json!(d)));
        assert_eq!(field, "resources[1].digest", "{d}");
        assert!(
            matches!(
                rule,
                Rule::DigestPrefix | Rule::DigestLength { .. } | Rule::DigestCharacter
            ),
            "{d}: {rule:?}"
        );
    }
    assert_eq!(
        refusal(&with_resource(1, "digest", json!(5))).1,
        Rule::WrongType {
            expected: "a string"
        }
    );
}

#[test]
fn w2_size_must_be_a_json_integer_in_range() {
    for size in [
        json!(-1),
        json!(1.5),
        json!(true),
        json!("3"),
        json!(9_007_199_254_740_992_u64),
        json!(1e3),
        json!(null),
        json!(u64::MAX),
    ] {
        assert_eq!(
            refusal(&with_resource(1, "size", size.clone())),
            ("resources[1].size".into(), Rule::SizeRange),
            "{size}"
        );
    }
    assert!(validate(&with_resource(0, "size", json!(0))).is_ok());
    let largest = Limits::new(512, 1 << 60).expect("raised");
    let v = with_resource(1, "size", json!(9_007_199_254_740_991_u64));
    assert!(SkillEntry::from_json(&v, &Validation::default().limits(largest)).is_ok());
}

#[test]
fn w2_sizes_that_would_overflow_a_u64_sum_are_declined_not_wrapped() {
    let max = json!(9_007_199_254_740_991_u64);
    let files: Vec<Value> = std::iter::once(res("skill://code-review/SKILL.md", max.clone()))
        .chain((0..2047).map(|i| res(&format!("skill://code-review/f{i}"), max.clone())))
        .collect();
    let v = Validation::default().limits(Limits::new(4096, u64::MAX).expect("raised"));
    // 2048 × (2^53 - 1) is about 2^64: the sum saturates instead of wrapping to a small number.
    match SkillEntry::from_json(&entry_with(json!(files)), &v) {
        Ok(e) => assert_eq!(
            e.manifest().expect("manifest").total_bytes(),
            u64::MAX - 2047
        ),
        Err(e) => panic!("a sum within u64 must be accepted under raised limits: {e}"),
    }
    let files: Vec<Value> = std::iter::once(res("skill://code-review/SKILL.md", max.clone()))
        .chain((0..2048).map(|i| res(&format!("skill://code-review/f{i}"), max.clone())))
        .collect();
    let v = Validation::default().limits(Limits::new(4096, u64::MAX - 1).expect("raised"));
    assert!(matches!(
        SkillEntry::from_json(&entry_with(json!(files)), &v),
        Err(skillcache::error::EntryError::LimitExceeded {
            limit: Limit::TotalBytes,
            ..
        })
    ));
}

#[test]
fn w3_resources_must_be_an_array_or_dynamic() {
    let mut missing = base();
    missing.as_object_mut().expect("object").remove("resources");
    assert_eq!(refusal(&missing), ("resources".into(), Rule::Missing));
    for r in [
        json!(null),
        json!({}),
        json!("static"),
        json!([]),
        json!(42),
        json!("DYNAMIC"),
    ] {
        assert_eq!(
            refusal(&entry_with(r.clone())),
            ("resources".into(), Rule::ResourcesShape),
            "{r}"
        );
    }
    let dynamic = validate(&entry_with(json!("dynamic"))).expect("dynamic is valid");
    assert!(dynamic.is_dynamic());
    assert_eq!(dynamic.binding(), None);
}

#[test]
fn w4_manifest_must_list_its_own_skill_md() {
    let v = entry_with(json!([res("skill://code-review/refs/a.md", json!(1))]));
    assert_eq!(refusal(&v), ("resources".into(), Rule::MissingSkillMd));
}

#[test]
fn w4_duplicate_uris_are_refused_after_percent_normalisation() {
    for (a, b) in [
        ("skill://code-review/Q&A.md", "skill://code-review/Q%26A.md"),
        ("skill://code-review/%41.md", "skill://code-review/A.md"),
        ("skill://code-review/%2a", "skill://code-review/%2A"),
        (
            "skill://code-review/SKILL.md",
            "skill://code-review/SKILL%2Emd",
        ),
    ] {
        let v = entry_with(json!([
            res("skill://code-review/SKILL.md", json!(0)),
            res(a, json!(1)),
            res(b, json!(1))
        ]));
        let v = if a.ends_with("SKILL.md") {
            entry_with(json!([res(a, json!(0)), res(b, json!(0))]))
        } else {
            v
        };
        assert!(
            matches!(refusal(&v).1, Rule::DuplicateUri { .. }),
            "{a} / {b}"
        );
    }
}

#[test]
fn w4_every_file_must_stay_inside_the_skill_root() {
    let cases = [
        "skill://code-review/../x",
        "skill://code-review/%2e%2e/x",
        "skill://code-review/a%2Fb",
        "skill://code-review/a%5Cb",
        "skill://code-review//x",
        "skill://code-review/x?q=1",
        "skill://code-review/x#frag",
        "skill://code-review-extra/x",
        "skill://other/x",
        "file:///etc/passwd",
        "skill:code-review/x",
        "skill://user@code-review/x",
        "skill://code-review:8080/x",
        "skill://code-review",
        "skill://code-review/a/%00",
    ];
    for c in cases {
        let (field, rule) = refusal(&with_resource(1, "uri", json!(c)));
        assert_eq!(field, "resources[1].uri", "{c}");
        assert!(!matches!(rule, Rule::DuplicateUri { .. }), "{c}: {rule:?}");
    }
}

#[test]
fn w5_name_must_equal_the_last_skill_path_segment() {
    let mut v = base();
    v["frontmatter"]["name"] = json!("code-reviewer");
    assert!(matches!(refusal(&v), (f, Rule::NameMismatch { .. }) if f == "frontmatter.name"));
    let nested = json!({
        "uri": "skill://acme/billing/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "d"},
        "resources": [res("skill://acme/billing/refunds/SKILL.md", json!(0))],
    });
    assert!(validate(&nested).is_ok());
    let mut not_skill_md = base();
    not_skill_md["uri"] = json!("skill://code-review/README.md");
    assert_eq!(refusal(&not_skill_md), ("uri".into(), Rule::NotSkillMd));
}

#[test]
fn w6_name_and_description_rules() {
    for bad in [
        "",
        "Code-review",
        "-code",
        "code-",
        "code--review",
        "code_review",
        "cödé",
        &"a".repeat(65),
    ] {
        let mut v = base();
        v["uri"] = json!(format!(
            "skill://x/{}/SKILL.md",
            if bad.is_empty() { "e" } else { bad }
        ));
        v["frontmatter"]["name"] = json!(bad);
        assert!(
            matches!(refusal(&v), (f, Rule::Name { .. }) if f == "frontmatter.name"),
            "{bad:?}"
        );
    }
    let mut v = base();
    v["frontmatter"]["description"] = json!("");
    assert_eq!(refusal(&v).1, Rule::DescriptionLength { chars: 0 });
    // 1024 scalar values of 4 bytes each (and 2 UTF-16 units each) is still 1024.
    v["frontmatter"]["description"] = json!("🌍".repeat(1024));
    assert!(validate(&v).is_ok());
    v["frontmatter"]["description"] = json!("é".repeat(1025));
    assert_eq!(refusal(&v).1, Rule::DescriptionLength { chars: 1025 });
    v["frontmatter"]["description"] = json!(["a"]);
    assert!(matches!(refusal(&v).1, Rule::WrongType { .. }));
    let mut no_fm = base();
    no_fm.as_object_mut().expect("object").remove("frontmatter");
    assert_eq!(refusal(&no_fm), ("frontmatter".into(), Rule::Missing));
}

#[test]
fn w6_other_agent_skills_fields_pass_by_default_and_fail_when_strict() {
    let mut v = base();
    v["frontmatter"]["metadata"] = json!({"version": 2, "tags": ["x"]});
    v["frontmatter"]["allowed-tools"] = json!(["Bash", "Read"]);
    assert!(validate(&v).is_ok());
    let strict = Validation::default().strict(true);
    assert!(matches!(
        SkillEntry::from_json(&v, &strict),
        Err(skillcache::error::EntryError::Invalid {
            rule: Rule::Strict { .. },
            ..
        })
    ));
    v["frontmatter"]["metadata"] = json!({"version": "2"});
    assert!(
        matches!(SkillEntry::from_json(&v, &strict), Err(skillcache::error::EntryError::Invalid { field, .. }) if field == "frontmatter.allowed-tools")
    );
    v["frontmatter"]["allowed-tools"] = json!("Bash Read");
    assert!(SkillEntry::from_json(&v, &strict).is_ok());
}

fn many(count: usize, each: u64, first: u64) -> Value {
    let files: Vec<Value> = std::iter::once(res("skill://code-review/SKILL.md", json!(first)))
        .chain((1..count).map(|i| res(&format!("skill://code-review/f/{i}.md"), json!(each))))
        .collect();
    entry_with(json!(files))
}

#[test]
fn w7_baseline_limits_are_accepted_exactly() {
    // 512 files summing to exactly 16,777,216 bytes.
    let e = validate(&many(512, 32_768, 32_768)).expect("512 files / 16 MiB");
    assert_eq!(e.manifest().expect("manifest").total_bytes(), 16_777_216);
    validate(&many(1, 0, 16_777_216)).expect("one single 16 MiB file");
    validate(&many(2, 0, 300 * 1024)).expect("a 300 KiB SKILL.md");
}

#[test]
fn w7_over_the_limits_is_declined_from_the_entry_naming_the_limit() {
    match validate(&many(513, 1, 1)) {
        Err(
            e @ skillcache::error::EntryError::LimitExceeded {
                limit: Limit::Files,
                declared: 513,
                max: 512,
                ..
            },
        ) => {
            assert!(e.to_string().contains("number of files"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    match validate(&many(512, 32_768, 32_769)) {
        Err(
            e @ skillcache::error::EntryError::LimitExceeded {
                limit: Limit::TotalBytes,
                declared: 16_777_217,
                ..
            },
        ) => {
            assert!(e.to_string().contains("total size"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        validate(&many(1, 0, 16_777_217)),
        Err(skillcache::error::EntryError::LimitExceeded { .. })
    ));
    let raised = Validation::default().limits(Limits::new(1024, 64 << 20).expect("raised"));
    assert!(SkillEntry::from_json(&many(513, 1, 1), &raised).is_ok());
    assert!(Limits::new(511, 16 << 20).is_err());
    assert!(Limits::new(512, (16 << 20) - 1).is_err());
}

#[test]
fn w8_cache_hint_defaults_and_clamping() {
    let hints = |v: Value| CacheHints::from_result("skills/list", v.as_object().expect("object"));
    let h = hints(json!({})).expect("empty is fine");
    assert_eq!((h.ttl_ms(), h.scope()), (0, Scope::Private));
    let h = hints(json!({"ttlMs": 300_000, "cacheScope": "public"})).expect("valid");
    assert_eq!((h.ttl_ms(), h.scope()), (300_000, Scope::Public));
    assert_eq!(
        hints(json!({"ttlMs": 10_u64.pow(12)}))
            .expect("clamped")
            .ttl_ms(),
        86_400_000
    );
    for bad in [
        json!({"ttlMs": -1}),
        json!({"ttlMs": 1.5}),
        json!({"ttlMs": "5"}),
        json!({"cacheScope": "shared"}),
        json!({"cacheScope": 1}),
    ] {
        assert!(
            matches!(
                hints(bad.clone()),
                Err(skillcache::error::EntryError::Response { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn w9_get_answered_for_another_skill_is_an_error() {
    let requested = SkillUri::parse("skill://other/SKILL.md").expect("valid");
    let result = json!({"skill": base(), "ttlMs": 1});
    assert!(matches!(
        parse_get_result(&result, &requested, &Validation::default()),
        Err(skillcache::error::EntryError::Response {
            rule: Rule::WrongSkill { .. },
            ..
        })
    ));
    let requested = SkillUri::parse("skill://code-review/SKILL%2Emd").expect("valid");
    let (entry, hints) = parse_get_result(&result, &requested, &Validation::default())
        .expect("same skill, other spelling");
    assert_eq!((entry.name(), hints.ttl_ms()), ("code-review", 1));
}

#[test]
fn w9_a_listing_that_repeats_a_skill_refuses_every_copy() {
    let mut other = base();
    other["uri"] = json!("skill://lint/SKILL.md");
    other["frontmatter"]["name"] = json!("lint");
    other["resources"] = json!([res("skill://lint/SKILL.md", json!(0))]);
    let mut respelled = base();
    respelled["uri"] = json!("skill://code-review/SKILL%2Emd");
    let mut listing = Listing::new();
    let p1 = parse_list_result(
        &json!({"skills": [base(), other], "nextCursor": "2"}),
        &Validation::default(),
    )
    .expect("page");
    assert_eq!(listing.add_page(p1).expect("ok"), Some("2".into()));
    let p2 =
        parse_list_result(&json!({"skills": [respelled]}), &Validation::default()).expect("page");
    assert_eq!(listing.add_page(p2).expect("ok"), None);
    let (skills, _) = listing.finish();
    assert_eq!(skills.len(), 3);
    assert!(matches!(
        &skills[0],
        Err(skillcache::error::EntryError::Invalid {
            rule: Rule::RepeatedSkill { .. },
            ..
        })
    ));
    assert!(skills[1].is_ok());
    assert!(matches!(
        &skills[2],
        Err(skillcache::error::EntryError::Invalid {
            rule: Rule::RepeatedSkill { .. },
            ..
        })
    ));
}

#[test]
fn w9_a_repeated_cursor_ends_paging_with_an_error() {
    let mut listing = Listing::new();
    for (i, cursor) in ["a", "b", "a"].iter().enumerate() {
        let page = parse_list_result(
            &json!({"skills": [], "nextCursor": cursor}),
            &Validation::default(),
        )
        .expect("page");
        let r = listing.add_page(page);
        if i < 2 {
            assert_eq!(r.expect("fresh cursor").as_deref(), Some(*cursor));
        } else {
            assert!(matches!(
                r,
                Err(skillcache::error::EntryError::Response {
                    rule: Rule::RepeatedCursor { .. },
                    ..
                })
            ));
        }
    }
}

#[test]
fn w9_one_bad_entry_does_not_refuse_its_neighbours() {
    let page = parse_list_result(
        &json!({"skills": [base(), entry_with(json!("static"))]}),
        &Validation::default(),
    )
    .expect("page");
    assert!(page.skills[0].is_ok());
    assert!(page.skills[1].is_err());
}

#[test]
fn w9_contents_are_matched_by_uri_never_by_position() {
    let uri = FileUri::parse("skill://s/a.md").expect("valid");
    let r = json!({"contents": [{"uri": "skill://s/b.md", "text": "b"}, {"uri": "skill://s/a.md", "text": "a"}]});
    assert_eq!(select_content(&r, &uri).expect("found"), b"a");
    let fails = |r: Value| match select_content(&r, &uri) {
        Err(skillcache::error::EntryError::Response { rule, .. }) => rule,
        other => panic!("expected a failure for {r}, got {other:?}"),
    };
    assert!(matches!(
        fails(json!({"contents": [{"uri": "skill://s/b.md", "text": "b"}]})),
        Rule::NoContent { .. }
    ));
    assert!(matches!(
        fails(json!({"contents": []})),
        Rule::NoContent { .. }
    ));
    assert!(matches!(fails(json!({})), Rule::WrongType { .. }));
    assert!(matches!(
        fails(
            json!({"contents": [{"uri": "skill://s/a.md", "text": "a"}, {"uri": "skill://s/%61.md", "text": "x"}]})
        ),
        Rule::ConflictingContent { .. }
    ));
    assert_eq!(
        fails(json!({"contents": [{"uri": "skill://s/a.md"}]})),
        Rule::ContentShape
    );
    assert_eq!(
        fails(json!({"contents": [{"uri": "skill://s/a.md", "text": "a", "blob": "YQ=="}]})),
        Rule::ContentShape
    );
    assert_eq!(
        fails(json!({"contents": [{"uri": "skill://s/a.md", "blob": "not base64!"}]})),
        Rule::Base64
    );
    // Two identical copies are one answer.
    let twice = json!({"contents": [{"uri": "skill://s/a.md", "text": "a"}, {"uri": "skill://s/a.md", "blob": "YQ=="}]});
    assert_eq!(select_content(&twice, &uri).expect("same bytes"), b"a");
}

#[test]
fn w9_text_is_hashed_as_utf8_and_blob_as_decoded_bytes() {
    let uri = FileUri::parse("skill://s/a.md").expect("valid");
    let text = select_content(
        &json!({"contents": [{"uri": "skill://s/a.md", "text": "héllo"}]}),
        &uri,
    )
    .expect("text");
    assert_eq!(Digest::of(&text), Digest::of("héllo".as_bytes()));
    let blob = select_content(
        &json!({"contents": [{"uri": "skill://s/a.md", "blob": "AP8="}]}),
        &uri,
    )
    .expect("blob");
    assert_eq!(blob, [0x00, 0xff]);
}

#[test]
fn a1_binding_ignores_order_and_spelling_and_sees_every_change() {
    let e = validate(&base()).expect("valid");
    let mut reordered = base();
    reordered["resources"]
        .as_array_mut()
        .expect("array")
        .reverse();
    assert_eq!(validate(&reordered).expect("valid").binding(), e.binding());
    let respelled = with_resource(1, "uri", json!("skill://code-review/ref%73/a.md"));
    assert_eq!(validate(&respelled).expect("valid").binding(), e.binding());
    let changed = with_resource(1, "digest", json!(Digest::of(b"x").to_string()));
    assert_ne!(validate(&changed).expect("valid").binding(), e.binding());
    let mut added = base();
    added["resources"]
        .as_array_mut()
        .expect("array")
        .push(res("skill://code-review/b.md", json!(1)));
    assert_ne!(validate(&added).expect("valid").binding(), e.binding());
    let mut removed = base();
    removed["resources"].as_array_mut().expect("array").pop();
    assert_ne!(validate(&removed).expect("valid").binding(), e.binding());
    assert_eq!(e.binding().expect("bound").as_bytes().len(), 32);
}

#[test]
fn a2_diff_names_added_removed_and_changed_files() {
    let old = validate(&base()).expect("valid");
    let mut v = with_resource(1, "digest", json!(Digest::of(b"x").to_string()));
    v["resources"]
        .as_array_mut()
        .expect("array")
        .push(res("skill://code-review/new.md", json!(1)));
    v["frontmatter"]["description"] = json!("Reviews code, now better.");
    let new = validate(&v).expect("valid");
    let d = old.diff(&new);
    assert_eq!(
        d.added,
        vec![FileUri::parse("skill://code-review/new.md").expect("valid")]
    );
    assert_eq!(d.changed.len(), 1);
    assert_eq!(d.changed[0].uri.as_str(), "skill://code-review/refs/a.md");
    assert!(d.removed.is_empty());
    assert_eq!(d.frontmatter[0].key, "description");
    let text = d.to_string();
    assert!(
        text.contains("added skill://code-review/new.md")
            && text.contains("changed skill://code-review/refs/a.md"),
        "{text}"
    );
    let back = new.diff(&old);
    assert_eq!(back.removed, d.added);
    assert!(old.diff(&old).is_empty());
    let dynamic = validate(&entry_with(json!("dynamic"))).expect("valid");
    assert!(old.diff(&dynamic).files_changed());
}

#[test]
fn o5_a_scheme_proves_nothing_and_any_scheme_validates() {
    let v = json!({
        "uri": "github://owner/repo/skills/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "d"},
        "resources": [res("github://owner/repo/skills/refunds/SKILL.md", json!(0))],
    });
    assert!(validate(&v).is_ok());
}
