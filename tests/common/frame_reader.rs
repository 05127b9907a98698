//! The frame's opening tag as its consumers read it (K1): a real HTML tokenizer (html5ever, the
//! WHATWG tokenizer), a real XML parser (quick-xml), and the reading `docs/design.md` documents.
//! Shared by `tests/frame.rs` and the `frame` fuzz target (`fuzz/fuzz_targets/frame.rs`), which
//! include this file by path.
//!
//! Each reader is given the whole frame, as a consumer would be, and returns the attributes of
//! the first tag it meets, in order, values decoded — or why it could not. [`attributes`] runs
//! all three and insists they agree: a value that left its quotes under any one reading shows up
//! as an extra, a missing or a changed attribute.
#![allow(dead_code, missing_docs)]

use std::cell::RefCell;

/// One attribute, as read: its name and its decoded value.
pub type Attribute = (String, String);

/// The frame as `docs/design.md` says to read it.
#[derive(Debug)]
pub struct Documented {
    pub attributes: Vec<Attribute>,
    /// The content between the opening line and the closing line; `None` for a self-closing
    /// (binary) frame.
    pub content: Option<String>,
    /// What follows the frame.
    pub after: String,
}

/// The tag's element name.
const TAG: &str = "mcp-skill-file";

/// The documented reading: the opening line is `<mcp-skill-file`, then ` name="value"` pairs
/// (a value holds no `"`; `&amp;` `&lt;` `&gt;` `&quot;` `&#39;` decode to `& < > " '`, any other
/// `&` is not a frame), then `>` (text) or `/>` (binary). A text frame's first attribute is
/// `boundary`; its content is everything up to the first line `</mcp-skill-file boundary="B">`
/// with that boundary.
pub fn documented(frame: &str) -> Result<Documented, String> {
    let (open, rest) = frame
        .split_once('\n')
        .ok_or("no line break after the opening line")?;
    let mut tail = open
        .strip_prefix(&format!("<{TAG}"))
        .ok_or("the first line does not open the frame")?;
    let mut attributes: Vec<Attribute> = Vec::new();
    while let Some(pair) = tail.strip_prefix(' ') {
        let (name, value_on) = pair.split_once("=\"").ok_or("an attribute without =\"")?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(format!("an attribute name that is not a word: {name:?}"));
        }
        let (raw, after) = value_on
            .split_once('"')
            .ok_or("a value without its closing quote")?;
        if attributes.iter().any(|(n, _)| n == name) {
            return Err(format!("{name} given twice"));
        }
        attributes.push((name.to_owned(), decode_references(raw)?));
        tail = after;
    }
    let self_closing = match tail {
        ">" => false,
        "/>" => true,
        _ => return Err(format!("the opening line does not end the tag: {tail:?}")),
    };
    if self_closing {
        return Ok(Documented {
            attributes,
            content: None,
            after: rest.to_owned(),
        });
    }
    let boundary = match attributes.first() {
        Some((name, b)) if name == "boundary" => b.clone(),
        _ => return Err("a text frame whose first attribute is not its boundary".to_owned()),
    };
    let close = format!("</{TAG} boundary=\"{boundary}\">\n");
    let at = rest.find(&close).ok_or("no line closes the frame")?;
    Ok(Documented {
        attributes,
        content: Some(rest[..at].to_owned()),
        after: rest[at + close.len()..].to_owned(),
    })
}

fn decode_references(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find(['&', '<', '>']) {
        out.push_str(&rest[..at]);
        let reference = &rest[at..];
        let (text, c) = [
            ("&amp;", '&'),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&quot;", '"'),
            ("&#39;", '\''),
        ]
        .into_iter()
        .find(|(text, _)| reference.starts_with(text))
        .ok_or_else(|| format!("a bare markup character in a value: {raw:?}"))?;
        out.push(c);
        rest = &reference[text.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first tag of `frame` as quick-xml reads it, with its duplicate check on and every value
/// normalised and unescaped as XML 1.0 says; the tag must be the frame's whole first line.
pub fn xml(frame: &str) -> Result<Vec<Attribute>, String> {
    use quick_xml::XmlVersion;
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(frame);
    let event = reader.read_event().map_err(|e| format!("XML: {e}"))?;
    let (Event::Start(tag) | Event::Empty(tag)) = &event else {
        return Err(format!("XML: the first event is not a tag: {event:?}"));
    };
    if tag.name().as_ref() != TAG.as_bytes() {
        return Err(format!("XML: another element first: {event:?}"));
    }
    let line = frame.find('\n').unwrap_or(frame.len());
    if usize::try_from(reader.buffer_position()).ok() != Some(line) {
        return Err("XML: the tag is not the whole first line".to_owned());
    }
    let decoder = reader.decoder();
    let mut out = Vec::new();
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|e| format!("XML: {e}"))?;
        let value = attribute
            .decoded_and_normalized_value(XmlVersion::Implicit1_0, decoder)
            .map_err(|e| format!("XML: {e}"))?;
        let name = String::from_utf8_lossy(attribute.key.as_ref()).into_owned();
        out.push((name, value.into_owned()));
    }
    Ok(out)
}

/// Collects the tokens html5ever emits, up to the first tag.
#[derive(Default)]
struct FirstTag {
    errors_before: RefCell<Vec<String>>,
    tag: RefCell<Option<html5ever::tokenizer::Tag>>,
    before: RefCell<usize>,
}

impl html5ever::tokenizer::TokenSink for FirstTag {
    type Handle = ();

    fn process_token(
        &self,
        token: html5ever::tokenizer::Token,
        _line: u64,
    ) -> html5ever::tokenizer::TokenSinkResult<()> {
        use html5ever::tokenizer::Token;
        if self.tag.borrow().is_none() {
            match token {
                Token::TagToken(tag) => *self.tag.borrow_mut() = Some(tag),
                Token::ParseError(e) => self.errors_before.borrow_mut().push(e.into_owned()),
                _ => *self.before.borrow_mut() += 1,
            }
        }
        html5ever::tokenizer::TokenSinkResult::Continue
    }
}

/// The first tag of `frame` as the WHATWG HTML tokenizer (html5ever) reads it: it must be the
/// first token, a start tag without a parse error or a dropped duplicate attribute.
pub fn html(frame: &str) -> Result<Vec<Attribute>, String> {
    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::{BufferQueue, StartTag, Tokenizer, TokenizerOpts};
    let tokenizer = Tokenizer::new(
        FirstTag::default(),
        TokenizerOpts {
            exact_errors: true,
            ..TokenizerOpts::default()
        },
    );
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(frame));
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let sink = &tokenizer.sink;
    let tag = sink.tag.borrow_mut().take().ok_or("HTML: no tag")?;
    if *sink.before.borrow() > 0 {
        return Err("HTML: the tag is not the first token".to_owned());
    }
    if let Some(e) = sink.errors_before.borrow().first() {
        return Err(format!("HTML: a parse error in the tag: {e}"));
    }
    if tag.kind != StartTag || &*tag.name != TAG {
        return Err(format!("HTML: another tag first: {tag:?}"));
    }
    if tag.had_duplicate_attributes {
        return Err("HTML: an attribute given twice (the tokenizer kept the first)".to_owned());
    }
    Ok(tag
        .attrs
        .iter()
        .map(|a| (a.name.local.to_string(), a.value.to_string()))
        .collect())
}

/// The frame's opening attributes, read by all three readers, which must agree; with the
/// documented reading of the rest.
pub fn attributes(frame: &str) -> Result<Documented, String> {
    let documented = documented(frame)?;
    let xml = xml(frame)?;
    let html = html(frame)?;
    if xml != documented.attributes || html != documented.attributes {
        return Err(format!(
            "the readers disagree:\n documented {:?}\n XML        {xml:?}\n HTML       {html:?}",
            documented.attributes
        ));
    }
    Ok(documented)
}

/// Names and values as `&str` pairs, for comparing with a list written out.
pub fn pairs(attributes: &[Attribute]) -> Vec<(&str, &str)> {
    attributes
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect()
}
