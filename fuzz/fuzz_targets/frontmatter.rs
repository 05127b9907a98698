//! Frontmatter: parsing and comparing any bytes never panics, stays bounded, and a parsed
//! frontmatter always equals itself and its JSON round trip (R-V6).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcache::frontmatter::{compare, parse};

fuzz_target!(|data: &[u8]| {
    // Fuzz both the raw bytes and the bytes wrapped as a frontmatter block.
    let mut wrapped = b"---\n".to_vec();
    wrapped.extend_from_slice(data);
    wrapped.extend_from_slice(b"\n---\n");
    for input in [data, wrapped.as_slice()] {
        if let Ok(fm) = parse(input) {
            assert!(compare(&fm, &fm).is_empty());
            let json = serde_json::to_string(&fm).expect("serialises");
            let back: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&json).expect("parses");
            assert!(compare(&fm, &back).is_empty(), "round trip changed {json}");
        }
    }
});
