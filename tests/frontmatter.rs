//! R-V6: frontmatter extraction, YAML 1.2 core schema resolution, and comparison.

mod common;

use serde_json::{Value, json};
use skillcache::error::FrontmatterProblem;
use skillcache::frontmatter::{self, DiffKind, Frontmatter, compare, json_equal};

fn parse(fm: &str) -> Result<Frontmatter, FrontmatterProblem> {
    frontmatter::parse(&common::skill_md(fm))
}

fn obj(v: Value) -> Frontmatter {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

#[test]
fn v6_yaml_core_vectors_all_pass() {
    let path = common::data_dir().join("yaml-core-vectors.tsv");
    let text = std::fs::read_to_string(&path).expect("vectors file is readable");
    let mut checked = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut cols = line.split('\t');
        let yaml = cols.next().expect("yaml column").replace("\\n", "\n");
        let expected = cols.next().expect("expected column");
        let got = parse(&format!("name: demo\ndescription: d\n{yaml}"));
        if expected == "ERROR" {
            assert!(got.is_err(), "{yaml:?} must be refused, got {got:?}");
        } else {
            let mut got = got.unwrap_or_else(|e| panic!("{yaml:?} must parse: {e}"));
            assert_eq!(got.remove("name"), Some(json!("demo")));
            assert_eq!(got.remove("description"), Some(json!("d")));
            let want: Value = serde_json::from_str(expected).expect("expected column is JSON");
            assert!(
                json_equal(&Value::Object(got.clone()), &want),
                "{yaml:?}: got {got:?}, want {want}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} vectors read");
}

#[test]
fn v6_equal_frontmatter_has_no_diff_and_key_order_is_ignored() {
    let file = parse("name: demo\ndescription: d\nmetadata:\n  b: 1\n  a: x").expect("parses");
    let entry = obj(json!({"metadata": {"a": "x", "b": 1}, "description": "d", "name": "demo"}));
    assert!(compare(&entry, &file).is_empty());
}

#[test]
fn v6_different_description_is_named() {
    let file = parse("name: demo\ndescription: the file").expect("parses");
    let entry = obj(json!({"name": "demo", "description": "the entry"}));
    let diffs = compare(&entry, &file);
    assert_eq!(diffs.len(), 1);
    assert_eq!(
        (diffs[0].key.as_str(), diffs[0].kind),
        ("description", DiffKind::Different)
    );
}

#[test]
fn v6_extra_key_on_either_side_is_a_difference() {
    let file = parse("name: demo\ndescription: d\nlicense: MIT").expect("parses");
    let entry = obj(json!({"name": "demo", "description": "d"}));
    assert_eq!(compare(&entry, &file)[0].kind, DiffKind::ExtraInFile);
    let entry = obj(json!({"name": "demo", "description": "d", "license": "MIT", "x": 1}));
    let diffs = compare(&entry, &file);
    assert_eq!(
        (diffs[0].key.as_str(), diffs[0].kind),
        ("x", DiffKind::MissingInFile)
    );
}

#[test]
fn v6_nested_difference_names_the_path() {
    let file = parse("name: demo\ndescription: d\nmetadata:\n  version: \"2\"").expect("parses");
    let entry = obj(json!({"name": "demo", "description": "d", "metadata": {"version": "3"}}));
    assert_eq!(compare(&entry, &file)[0].key, "metadata.version");
}

#[test]
fn v6_arrays_keep_their_order() {
    let file = parse("name: demo\ndescription: d\ntags: [a, b]").expect("parses");
    let entry = obj(json!({"name": "demo", "description": "d", "tags": ["b", "a"]}));
    assert_eq!(compare(&entry, &file)[0].key, "tags");
}

#[test]
fn v6_no_type_coercion() {
    let file = parse("name: demo\ndescription: d\nflag: 1").expect("parses");
    for other in [json!(true), json!("1"), json!(1.5)] {
        let entry = obj(json!({"name": "demo", "description": "d", "flag": other}));
        assert_eq!(compare(&entry, &file).len(), 1, "1 vs {other}");
    }
}

#[test]
fn v6_numbers_compare_by_value() {
    let file =
        parse("name: demo\ndescription: d\nversion: 1.0\nbig: 9007199254740993").expect("parses");
    let entry = obj(
        json!({"name": "demo", "description": "d", "version": 1, "big": 9_007_199_254_740_993_u64}),
    );
    assert!(compare(&entry, &file).is_empty());
    // Rounding never makes two different integers equal.
    let entry = obj(
        json!({"name": "demo", "description": "d", "version": 1, "big": 9_007_199_254_740_992.0}),
    );
    assert_eq!(compare(&entry, &file)[0].key, "big");
}

#[test]
fn v6_dates_and_yes_on_stay_strings() {
    let file =
        parse("name: demo\ndescription: d\ndate: 2025-12-01\na: yes\nb: on").expect("parses");
    let entry = obj(
        json!({"name": "demo", "description": "d", "date": "2025-12-01", "a": "yes", "b": "on"}),
    );
    assert!(compare(&entry, &file).is_empty());
}

#[test]
fn v6_what_json_cannot_say_fails_closed() {
    assert!(matches!(
        parse("name: demo\ndescription: d\nk: .nan"),
        Err(FrontmatterProblem::NonFinite { .. })
    ));
    assert!(matches!(
        parse("name: demo\ndescription: d\nk: 1e999"),
        Err(FrontmatterProblem::NonFinite { .. })
    ));
    assert!(
        matches!(parse("name: demo\nname: again\ndescription: d"), Err(FrontmatterProblem::DuplicateKey { key }) if key == "name")
    );
    assert!(matches!(
        parse("name: demo\ndescription: &a d\nk: *a"),
        Err(FrontmatterProblem::Anchor)
    ));
    assert!(parse("name: demo\ndescription: d\nk: *a").is_err());
    assert!(matches!(
        parse("name: demo\ndescription: !!str d"),
        Err(FrontmatterProblem::Tag)
    ));
    assert!(matches!(
        parse("name: demo\ndescription: d\n1: x"),
        Err(FrontmatterProblem::NonStringKey)
    ));
    assert!(matches!(
        parse("name: demo\ndescription: d\n? [a]\n: x"),
        Err(FrontmatterProblem::NonStringKey)
    ));
}

#[test]
fn v6_nesting_is_bounded() {
    let deep = format!(
        "name: demo\ndescription: d\nk: {}{}",
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(matches!(
        parse(&deep),
        Err(FrontmatterProblem::TooDeep { .. })
    ));
    let ok = format!(
        "name: demo\ndescription: d\nk: {}{}",
        "[".repeat(60),
        "]".repeat(60)
    );
    assert!(parse(&ok).is_ok());
}

#[test]
fn v6_bom_is_skipped_for_parsing_only() {
    let mut md = b"\xEF\xBB\xBF".to_vec();
    md.extend(common::skill_md("name: demo\ndescription: d"));
    let fm = frontmatter::parse(&md).expect("BOM-prefixed file parses");
    assert_eq!(fm.get("name"), Some(&json!("demo")));
    // The digest covers the BOM: the bytes are different files.
    assert_ne!(
        skillcache::Digest::of(&md),
        skillcache::Digest::of(&md[3..])
    );
}

#[test]
fn v6_crlf_parses_and_block_scalars_use_lf() {
    let md = b"---\r\nname: demo\r\ndescription: |\r\n  one\r\n  two\r\n---  \r\nbody\r\n";
    let fm = frontmatter::parse(md).expect("CRLF parses");
    assert_eq!(fm.get("description"), Some(&json!("one\ntwo\n")));
}

#[test]
fn v6_shapes_that_are_not_frontmatter() {
    let p = |b: &[u8]| match frontmatter::parse(b) {
        Err(problem) => problem,
        other => panic!("expected a frontmatter error, got {other:?}"),
    };
    assert_eq!(p(b"# Title\nname: x\n"), FrontmatterProblem::NoOpening);
    assert_eq!(p(b""), FrontmatterProblem::NoOpening);
    assert_eq!(p(b" ---\nname: x\n---\n"), FrontmatterProblem::NoOpening);
    assert_eq!(p(b"---\nname: x\n"), FrontmatterProblem::NoClosing);
    assert_eq!(p(b"---\n- a\n- b\n---\n"), FrontmatterProblem::NotAMapping);
    assert_eq!(p(b"---\njust text\n---\n"), FrontmatterProblem::NotAMapping);
    assert_eq!(p(b"---\n---\n"), FrontmatterProblem::NotAMapping);
    assert_eq!(p(b"---\nname: \xff\n---\n"), FrontmatterProblem::NotUtf8);
    assert!(matches!(
        p(b"---\nname: demo\ndescription: a: b\n---\n"),
        FrontmatterProblem::Syntax { .. }
    ));
}

#[test]
fn v6_oversized_frontmatter_is_refused_without_parsing() {
    let mut md = b"---\n".to_vec();
    md.extend(std::iter::repeat_n(b"k: v\n".as_slice(), 300_000).flatten());
    md.extend(b"---\n");
    assert!(matches!(
        frontmatter::parse(&md),
        Err(FrontmatterProblem::TooLarge { .. })
    ));
}

#[test]
fn v6_large_numbers_compare_equal_to_their_json_rendering() {
    // Found by the frontmatter fuzz target: a 105-digit integer becomes the float 1.11…e104. The
    // server's JSON rendering of it must compare equal, which needs correctly rounded JSON float
    // parsing (serde_json's `float_roundtrip`).
    let digits = "1".repeat(105);
    let fm = parse(&format!("name: demo\ndescription: d\n0e: {digits}")).expect("parses");
    let json_text = serde_json::to_string(&Value::Object(fm.clone())).expect("serialises");
    let from_wire: Value = serde_json::from_str(&json_text).expect("parses back");
    assert!(
        compare(from_wire.as_object().expect("object"), &fm).is_empty(),
        "{json_text}"
    );
    for text in [
        "1.111111111111111e+104",
        "0.1",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
        "9007199254740993.0",
    ] {
        let fm = parse(&format!("name: demo\ndescription: d\nk: {text}")).expect("parses");
        let wire: Value = serde_json::from_str(&format!(
            "{{\"name\":\"demo\",\"description\":\"d\",\"k\":{text}}}"
        ))
        .expect("json");
        assert!(
            compare(wire.as_object().expect("object"), &fm).is_empty(),
            "{text}"
        );
    }
}
