//! URIs: parsing never panics, and resolving any reference against a skill never yields a URI
//! outside that skill's root (R-V5, R-W4). The input is "skill uri\nreference".
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcache::{FileUri, SkillUri};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (skill, reference) = text
        .split_once('\n')
        .unwrap_or(("skill://acme/billing/refunds/SKILL.md", text));
    let _ = FileUri::parse(reference);
    let Ok(skill) = SkillUri::parse(skill) else {
        return;
    };
    if let Ok(file) = skill.resolve(reference) {
        assert!(skill.contains(&file), "{reference:?} escaped {skill}");
        // The resolved form is canonical: it parses back to itself and stays inside.
        let again = FileUri::parse(file.canonical()).expect("canonical form parses");
        assert_eq!(again.canonical(), file.canonical());
        assert!(skill.contains(&again));
    }
});
