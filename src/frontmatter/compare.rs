//! Field-by-field comparison of two frontmatters (R-V6).

use std::fmt;

use serde_json::{Number, Value};

use super::Frontmatter;

/// How one key differs.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// The entry has the key; the `SKILL.md` does not.
    MissingInFile,
    /// The `SKILL.md` has the key; the entry does not.
    ExtraInFile,
    /// Both have it with different values.
    Different,
}

/// One differing key, as a dotted path (`metadata.version`) when the difference is nested.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldDiff {
    /// The key path.
    pub key: String,
    /// How it differs.
    pub kind: DiffKind,
}

impl fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.kind {
            DiffKind::MissingInFile => "missing from SKILL.md",
            DiffKind::ExtraInFile => "not in the entry",
            DiffKind::Different => "different value",
        };
        // The key is the SKILL.md's or the server's text (R-E5), of any length: cut.
        write!(f, "{} ({how})", crate::display::display_cut_bare(&self.key))
    }
}

/// The keys whose values differ between the entry's frontmatter and the file's, sorted by key.
/// Empty means equal. Key order is ignored; arrays keep their order; numbers compare by value
/// (`1.0` equals `1`); there is no coercion (`1` is not `true`, `"1"` is not `1`).
#[must_use]
pub fn compare(entry: &Frontmatter, file: &Frontmatter) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    diff_maps("", entry, file, &mut out);
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

fn diff_maps(prefix: &str, entry: &Frontmatter, file: &Frontmatter, out: &mut Vec<FieldDiff>) {
    let path = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    for (k, ev) in entry {
        match (ev, file.get(k)) {
            (_, None) => out.push(FieldDiff {
                key: path(k),
                kind: DiffKind::MissingInFile,
            }),
            (Value::Object(em), Some(Value::Object(fm))) => diff_maps(&path(k), em, fm, out),
            (_, Some(fv)) if !json_equal(ev, fv) => {
                out.push(FieldDiff {
                    key: path(k),
                    kind: DiffKind::Different,
                });
            }
            _ => {}
        }
    }
    for k in file.keys().filter(|k| !entry.contains_key(*k)) {
        out.push(FieldDiff {
            key: path(k),
            kind: DiffKind::ExtraInFile,
        });
    }
}

/// JSON equality with numbers compared by value.
#[must_use]
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn as_int(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn number_equal(x: &Number, y: &Number) -> bool {
    match (as_int(x), as_int(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(i), None) => float_equals_int(y.as_f64(), i),
        (None, Some(i)) => float_equals_int(x.as_f64(), i),
        #[allow(clippy::float_cmp)] // exact equality is the point: numbers compare by value
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

#[allow(clippy::cast_possible_truncation)]
fn float_equals_int(f: Option<f64>, i: i128) -> bool {
    // Exact: an integral float inside i128's range converts without rounding, so it equals `i`
    // only if it *is* `i` (2^53 as a float never equals the integer 2^53 + 1).
    f.is_some_and(|f| f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i)
}
