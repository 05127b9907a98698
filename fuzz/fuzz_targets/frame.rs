//! The frame for model context (R-Q2, K1): for any origin label, file URI and content, the
//! opening tag read as HTML (html5ever's tokenizer), as XML (quick-xml) and as `docs/design.md`
//! documents holds exactly the host's attributes, once each and in the host's order, with the
//! host's values; the content is the whole text, unchanged, and nothing follows the frame.
//!
//! Input: one flag byte (bit 0: a dynamic skill's unverified file), then the origin label up to
//! the first `\n`, the URI up to the next `\n` (as it is if the URI rules take it, else behind
//! `skill://s/`), then the content. A label the label rules refuse becomes `docs`.
#![no_main]

#[path = "../../tests/common/frame_reader.rs"]
mod frame_reader;

use libfuzzer_sys::fuzz_target;
use skillcache::{Digest, FileUri, Origin, Verification};

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

fn uri_of(text: &[u8]) -> Option<FileUri> {
    let text = std::str::from_utf8(text).ok()?;
    FileUri::parse(text)
        .or_else(|_| FileUri::parse(&format!("skill://s/{text}")))
        .ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (label, rest) = split_line(rest);
    let (uri, content) = split_line(rest);
    let origin = std::str::from_utf8(label)
        .ok()
        .and_then(|l| Origin::new(l).ok())
        .unwrap_or_else(|| Origin::new("docs").expect("a label"));
    let Some(uri) = uri_of(uri) else {
        return;
    };
    let verification = if flags & 1 == 0 {
        Verification::Verified(Digest::of(content))
    } else {
        Verification::Unverified
    };
    let framed = skillcache::frame::frame(&origin, &uri, verification, content);
    let read =
        frame_reader::attributes(&framed).unwrap_or_else(|why| panic!("{why}\nframe: {framed:?}"));
    let attributes = frame_reader::pairs(&read.attributes);
    let text = std::str::from_utf8(content)
        .ok()
        .filter(|t| !t.contains('\0'));
    let (host, content_attribute) = match text {
        Some(_) => (&attributes[1..], None),
        None => (&attributes[..], attributes.last()),
    };
    // The URI as shown: URI characters only, and the same file.
    let shown_uri = host.get(2).map_or("", |(_, v)| v);
    assert!(
        shown_uri
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$()*+,;=:@/%".contains(&b)),
        "{shown_uri:?}"
    );
    assert_eq!(FileUri::parse(shown_uri).ok().as_ref(), Some(&uri));
    let size = content.len().to_string();
    let verification = match verification {
        Verification::Verified(d) => d.to_string(),
        Verification::Unverified => "unverified".to_owned(),
    };
    let mut expected = vec![
        ("from", "MCP server"),
        ("origin", origin.as_str()),
        ("uri", shown_uri),
        ("size", &size),
        ("verification", &verification),
    ];
    if content_attribute.is_some() {
        expected.push(("content", "binary, not shown"));
    }
    assert_eq!(host, expected.as_slice(), "{framed:?}");
    match text {
        Some(text) => {
            let (name, boundary) = attributes[0];
            assert_eq!(name, "boundary");
            assert!(boundary.len() == 32 && boundary.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(!text.contains(boundary));
            let shown = read.content.as_deref().expect("a text frame has content");
            let expected = if text.is_empty() || text.ends_with('\n') {
                text.to_owned()
            } else {
                format!("{text}\n")
            };
            assert_eq!(
                shown, expected,
                "the whole text, unchanged, inside the frame"
            );
        }
        None => assert!(read.content.is_none(), "binary is never inlined"),
    }
    assert!(read.after.is_empty(), "nothing follows the frame");
});
