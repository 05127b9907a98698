//! Digest text: parse never panics; whatever parses displays back to the same text, and the
//! display of any 32 bytes parses back to them (R-W1).
#![no_main]

use libfuzzer_sys::fuzz_target;
use skillcache::Digest;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(d) = text.parse::<Digest>()
    {
        assert_eq!(d.to_string(), text);
    }
    if data.len() >= 32 {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&data[..32]);
        let d = Digest::from_bytes(bytes);
        assert_eq!(d.to_string().parse::<Digest>().ok(), Some(d));
    }
});
