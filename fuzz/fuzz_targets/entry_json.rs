//! Entries: validating any JSON never panics, and every accepted entry re-validates to itself
//! from its wire form (R-W*).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcache::SkillEntry;
use skillcache::entry::{Validation, parse_list_result};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for strict in [false, true] {
        let v = Validation::default().strict(strict);
        if let Ok(entry) = SkillEntry::from_json(&value, &v) {
            let again = SkillEntry::from_json(&entry.to_json(), &v)
                .expect("an accepted entry re-validates");
            assert_eq!(again, entry);
            assert_eq!(again.binding(), entry.binding());
            if let Some(m) = entry.manifest() {
                assert!(
                    m.files()
                        .iter()
                        .all(|f| f.uri() == entry.uri().file() || entry.uri().contains(f.uri()))
                );
            }
        }
    }
    let _ = parse_list_result(&value, &Validation::default());
});
