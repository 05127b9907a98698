use super::*;

fn skill(s: &str) -> SkillUri {
    SkillUri::parse(s).expect("valid skill uri")
}

fn rule_of(e: UriError) -> Rule {
    e.rule
}

#[test]
fn w4_equal_spellings_after_percent_normalisation_are_equal() {
    let pairs = [
        ("skill://a/Q&A.md", "skill://a/Q%26A.md"),
        ("skill://a/%41.md", "skill://a/A.md"),
        ("skill://a/%2a", "skill://a/%2A"),
        ("skill://a/%2a", "skill://a/*"),
        ("SKILL://a/x", "skill://a/x"),
        ("skill://a/caf%C3%A9", "skill://a/café"),
    ];
    for (x, y) in pairs {
        assert_eq!(
            FileUri::parse(x).expect(x),
            FileUri::parse(y).expect(y),
            "{x} vs {y}"
        );
    }
    assert_ne!(
        FileUri::parse("skill://a/x").expect("ok"),
        FileUri::parse("skill://A/x").expect("ok")
    );
    assert_ne!(
        FileUri::parse("skill://a/x").expect("ok"),
        FileUri::parse("skill://a/X").expect("ok")
    );
}

#[test]
fn w4_bad_segments_are_refused_after_decoding_once() {
    let cases = [
        "skill://a/../x",
        "skill://a/./x",
        "skill://a/%2e%2e/x",
        "skill://a/%2E/x",
        "skill://a/b%2Fc",
        "skill://a/b%5Cc",
        "skill://a/b\\c",
        "skill://a/b%00c",
        "skill://a//x",
        "skill://a/x/",
        "skill://a/x%zz",
        "skill://a/x%4",
    ];
    for c in cases {
        assert!(
            matches!(
                rule_of(FileUri::parse(c).expect_err(c)),
                Rule::Segment { .. } | Rule::PercentEncoding
            ),
            "{c}"
        );
    }
    // Decoding happens exactly once: %252e%252e is the literal text "%2e%2e", not "..".
    let once = FileUri::parse("skill://a/%252e%252e").expect("a literal percent sign is fine");
    assert_eq!(once.canonical(), "skill://a/%252e%252e");
}

#[test]
fn w4_query_fragment_opaque_userinfo_port_are_refused() {
    assert_eq!(
        rule_of(FileUri::parse("skill://a/x?y=1").expect_err("query")),
        Rule::Query
    );
    assert_eq!(
        rule_of(FileUri::parse("skill://a/x#frag").expect_err("fragment")),
        Rule::Fragment
    );
    assert_eq!(
        rule_of(FileUri::parse("skill:a/x").expect_err("opaque")),
        Rule::NotHierarchical
    );
    assert_eq!(
        rule_of(FileUri::parse("urn:isbn:123").expect_err("opaque")),
        Rule::NotHierarchical
    );
    assert_eq!(
        rule_of(FileUri::parse("a/b").expect_err("relative")),
        Rule::NotHierarchical
    );
    assert_eq!(
        rule_of(FileUri::parse("1x://a/b").expect_err("scheme")),
        Rule::Scheme
    );
    assert!(matches!(
        rule_of(FileUri::parse("skill://u@a/x").expect_err("userinfo")),
        Rule::Authority { .. }
    ));
    assert!(matches!(
        rule_of(FileUri::parse("skill://a:80/x").expect_err("port")),
        Rule::Authority { .. }
    ));
    assert!(matches!(
        rule_of(FileUri::parse("skill:///x").expect_err("empty authority")),
        Rule::Authority { .. }
    ));
    assert_eq!(
        rule_of(FileUri::parse("skill://a/x\ny").expect_err("newline")),
        Rule::ControlCharacter
    );
    // Other schemes may have userinfo and ports; they carry no special meaning to the cache.
    assert!(FileUri::parse("https://u@example.com:8443/skills/x/SKILL.md").is_ok());
}

#[test]
fn w4_containment_is_segment_wise_and_rejects_sibling_prefixes() {
    let s = skill("skill://code-review/SKILL.md");
    let inside = |u: &str| s.contains(&FileUri::parse(u).expect(u));
    assert!(inside("skill://code-review/references/a.md"));
    assert!(inside("skill://code-review/SKILL.md"));
    assert!(!inside("skill://code-review-extra/x"));
    assert!(!inside("skill://code-review"));
    assert!(!inside("other://code-review/x"));
    assert!(!inside("skill://Code-review/x"));
    let nested = skill("github://owner/repo/skills/refunds/SKILL.md");
    assert!(
        nested.contains(&FileUri::parse("github://owner/repo/skills/refunds/a/b.md").expect("ok"))
    );
    assert!(
        !nested.contains(&FileUri::parse("github://owner/repo/skills/refunds-2/b.md").expect("ok"))
    );
    assert!(!nested.contains(&FileUri::parse("github://owner/repo/skills/x.md").expect("ok")));
}

#[test]
fn w5_skill_uri_needs_skill_md_and_a_skill_path() {
    assert_eq!(
        skill("skill://git-workflow/SKILL.md").name_segment(),
        "git-workflow"
    );
    assert_eq!(
        skill("skill://acme/billing/refunds/SKILL.md").name_segment(),
        "refunds"
    );
    assert_eq!(
        skill("file:///srv/skills/pdf/SKILL.md").name_segment(),
        "pdf"
    );
    assert_eq!(
        skill("skill://acme/billing/refunds/SKILL.md").root(),
        "skill://acme/billing/refunds"
    );
    for bad in [
        "skill://x/skill.md",
        "skill://x/README.md",
        "file:///SKILL.md",
        "skill://x/SKILL.md/y",
        "skill://x",
    ] {
        assert!(SkillUri::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn w5_authority_keeps_its_case() {
    let s = skill("skill://Acme/refunds/SKILL.md");
    assert_eq!(s.root(), "skill://Acme/refunds");
    assert_eq!(s.as_str(), "skill://Acme/refunds/SKILL.md");
}

#[test]
fn o5_any_scheme_is_accepted_and_none_is_special() {
    for u in [
        "github://owner/repo/skills/refunds/SKILL.md",
        "https://example.com/refunds/SKILL.md",
        "x-custom+v1.2://h/refunds/SKILL.md",
    ] {
        assert_eq!(skill(u).name_segment(), "refunds");
    }
}

#[test]
fn v5_relative_references_resolve_against_the_skill_root() {
    let s = skill("skill://acme/billing/refunds/SKILL.md");
    let ok = |r: &str| s.resolve(r).expect(r).canonical().to_owned();
    assert_eq!(
        ok("references/GUIDE.md"),
        "skill://acme/billing/refunds/references/GUIDE.md"
    );
    assert_eq!(
        ok("./references/GUIDE.md"),
        "skill://acme/billing/refunds/references/GUIDE.md"
    );
    assert_eq!(
        ok("references/Q&A.md#frag"),
        "skill://acme/billing/refunds/references/Q&A.md"
    );
    assert_eq!(
        ok("references/Q%26A.md"),
        "skill://acme/billing/refunds/references/Q&A.md"
    );
    assert_eq!(ok("a/../b.md"), "skill://acme/billing/refunds/b.md");
    assert_eq!(
        ok("skill://acme/billing/refunds/x.md"),
        "skill://acme/billing/refunds/x.md"
    );
    for bad in [
        "../other/x.md",
        "../refunds/x.md",
        "a/../../x.md",
        "//evil/x.md",
        "/etc/passwd",
        "file:///etc/passwd",
        "skill://acme/billing/other/x.md",
        "skill://evil/x.md",
        "https://acme/billing/refunds/x.md",
        "%2e%2e/x.md",
        "a%2Fb",
        "a\\b",
        "x.md?y=1",
        "",
        "#only-a-fragment",
        "references/",
        "references/..",
    ] {
        assert!(s.resolve(bad).is_err(), "{bad:?} must be refused");
    }
}

#[test]
fn v5_nested_skill_resolves_against_its_own_root() {
    let outer = skill("skill://qdrant/SKILL.md");
    let inner = skill("skill://qdrant/scaling/sharding/SKILL.md");
    assert_eq!(
        inner.resolve("refs/a.md").expect("ok").canonical(),
        "skill://qdrant/scaling/sharding/refs/a.md"
    );
    assert_eq!(
        outer.resolve("scaling/sharding/refs/a.md").expect("ok"),
        inner.resolve("refs/a.md").expect("ok")
    );
    assert!(inner.resolve("../../SKILL.md").is_err());
}
