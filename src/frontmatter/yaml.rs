//! YAML events → JSON under the YAML 1.2 core schema, failing closed on what JSON cannot say.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use super::{Frontmatter, MAX_DEPTH, MAX_NODES};
use super::FrontmatterProblem as P;

/// A collection being built.
enum Open {
    Seq(Vec<Value>),
    /// A mapping, and the key waiting for its value.
    Map(Map<String, Value>, Option<String>),
}

pub(super) fn to_json(text: &str) -> Result<Frontmatter, P> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    let mut documents = 0usize;
    let mut nodes = 0usize;
    loop {
        let (event, _) = parser.next_token().map_err(|e| P::Syntax {
            message: e.to_string(),
        })?;
        let value = match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(P::MultipleDocuments);
                }
                continue;
            }
            Event::Alias(_) => return Err(P::Alias),
            Event::Scalar(text, style, anchor, tag) => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                count(&mut nodes)?;
                if let Some(Open::Map(_, key @ None)) = stack.last_mut() {
                    // A scalar in key position: it must resolve to a string.
                    *key = Some(match resolve(&text, style)? {
                        Value::String(s) => s,
                        _ => return Err(P::NonStringKey),
                    });
                    continue;
                }
                resolve(&text, style)?
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                refuse_anchor_and_tag(anchor, tag.is_some())?;
                count(&mut nodes)?;
                if matches!(stack.last(), Some(Open::Map(_, None))) {
                    return Err(P::NonStringKey);
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(P::TooDeep { max: MAX_DEPTH });
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Open::Seq(Vec::new())
                } else {
                    Open::Map(Map::new(), None)
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                Some(Open::Map(map, None)) => Value::Object(map),
                // The parser never ends a mapping between a key and its value; fail closed anyway.
                Some(Open::Map(_, Some(_))) | None => {
                    return Err(P::Syntax {
                        message: "unbalanced collection".into(),
                    });
                }
            },
        };
        match stack.last_mut() {
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(map, key)) => {
                let key = key.take().ok_or(P::NonStringKey)?;
                if map.contains_key(&key) {
                    return Err(P::DuplicateKey { key });
                }
                map.insert(key, value);
            }
            None => root = Some(value),
        }
    }
    match root {
        Some(Value::Object(map)) => Ok(map),
        _ => Err(P::NotAMapping),
    }
}

fn refuse_anchor_and_tag(anchor: usize, tagged: bool) -> Result<(), P> {
    if anchor != 0 {
        return Err(P::Anchor);
    }
    if tagged {
        return Err(P::Tag);
    }
    Ok(())
}

fn count(nodes: &mut usize) -> Result<(), P> {
    *nodes += 1;
    if *nodes > MAX_NODES {
        return Err(P::TooManyNodes { max: MAX_NODES });
    }
    Ok(())
}

/// Resolves a scalar: quoted and block scalars are strings; plain ones follow the core schema.
fn resolve(text: &str, style: TScalarStyle) -> Result<Value, P> {
    if style != TScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => match core_number(text)? {
            Some(n) => Value::Number(n),
            None => Value::String(text.to_owned()),
        },
    })
}

/// The core schema's numeric forms: `[-+]?[0-9]+`, `0o[0-7]+`, `0x[0-9a-fA-F]+`, and
/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`; `[-+]?.inf` and `.nan` are refused.
fn core_number(text: &str) -> Result<Option<Number>, P> {
    let non_finite = || P::NonFinite {
        scalar: text.to_owned(),
    };
    if let Some(oct) = text.strip_prefix("0o") {
        return Ok(radix(oct, 8));
    }
    if let Some(hex) = text.strip_prefix("0x") {
        return Ok(radix(hex, 16));
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Err(non_finite());
    }
    let b = unsigned.as_bytes();
    if b.is_empty() {
        return Ok(None);
    }
    if b.iter().all(u8::is_ascii_digit) {
        let n = text.parse::<i64>().ok().map(Number::from);
        let n = n.or_else(|| text.parse::<u64>().ok().map(Number::from));
        return match n {
            Some(n) => Ok(Some(n)),
            None => float(text).map(Some).ok_or_else(non_finite),
        };
    }
    if !is_core_float(b) {
        return Ok(None);
    }
    float(text).map(Some).ok_or_else(non_finite)
}

fn radix(digits: &str, base: u32) -> Option<Number> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(base)) {
        return None;
    }
    // Larger than u64: fold into an f64 (what a JSON number can hold).
    Some(u64::from_str_radix(digits, base).map_or_else(
        |_| {
            let v = digits
                .chars()
                .filter_map(|c| c.to_digit(base))
                .fold(0f64, |acc, d| acc * f64::from(base) + f64::from(d));
            Number::from_f64(v).unwrap_or_else(|| Number::from(u64::MAX))
        },
        Number::from,
    ))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_core_float(b: &[u8]) -> bool {
    let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(b);
    let mut i = int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = digits(&b[i..]);
        i += frac;
    }
    if int == 0 && frac == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp = digits(&b[i..]);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

fn float(text: &str) -> Option<Number> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .and_then(Number::from_f64)
}
