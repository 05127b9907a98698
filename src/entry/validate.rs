//! The entry rules of R-W1…R-W7, applied to one untrusted `Skill` object.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::binding::Binding;
use super::error::{EntryError, Limit};
use super::{Limits, Manifest, ManifestFile, Resources, SkillEntry};
use crate::digest::Digest;
use crate::rule::Rule;
use crate::uri::{FileUri, SkillUri};

/// The largest size a server may declare: 2^53 - 1, the largest integer every JSON peer holds
/// exactly (R-W2).
pub const MAX_SIZE: u64 = (1 << 53) - 1;

/// How strictly entries are validated.
///
/// ```
/// use skillcache::entry::{Limits, Validation};
/// let v = Validation::default().strict(true).limits(Limits::new(1024, 32 << 20).unwrap());
/// assert!(v.is_strict());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validation {
    limits: Limits,
    strict: bool,
}

impl Validation {
    /// The per-skill limits (default: the baseline, [`Limits::default`]).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Validation {
        self.limits = limits;
        self
    }

    /// Strict Agent Skills rules (default: off). When on, `metadata` must map strings to strings
    /// and `allowed-tools` must be a string, as the Agent Skills specification says; real
    /// published skills break both, so the default accepts them (R-W6).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Validation {
        self.strict = strict;
        self
    }

    internal_pub! {
        /// The limits in force.
        #[must_use]
        fn current_limits(&self) -> Limits {
            self.limits
        }
    }

    internal_pub! {
        /// Whether the strict rules are on.
        #[must_use]
        fn is_strict(&self) -> bool {
            self.strict
        }
    }
}

struct Ctx<'a> {
    skill: Option<&'a str>,
}

impl Ctx<'_> {
    fn err(&self, field: impl Into<String>, rule: Rule) -> EntryError {
        EntryError::Invalid {
            origin: None,
            skill: self.skill.map(str::to_owned),
            field: field.into(),
            rule,
        }
    }
}

pub(super) fn entry(value: &Value, v: &Validation) -> Result<SkillEntry, EntryError> {
    let mut ctx = Ctx { skill: None };
    let obj = value.as_object().ok_or_else(|| {
        ctx.err(
            "(entry)",
            Rule::WrongType {
                expected: "an object",
            },
        )
    })?;

    let uri_text = string_field(&ctx, obj, "uri")?;
    ctx.skill = Some(uri_text);
    let uri = SkillUri::parse(uri_text).map_err(|e| ctx.err("uri", e.rule))?;

    let frontmatter = match obj.get("frontmatter") {
        None => return Err(ctx.err("frontmatter", Rule::Missing)),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(ctx.err(
                "frontmatter",
                Rule::WrongType {
                    expected: "an object",
                },
            ));
        }
    };
    check_frontmatter(&ctx, &uri, frontmatter, v)?;

    let resources = match obj.get("resources") {
        None => return Err(ctx.err("resources", Rule::Missing)),
        Some(Value::String(s)) if s == "dynamic" => Resources::Dynamic,
        Some(Value::Array(items)) if !items.is_empty() => {
            Resources::Manifest(manifest(&ctx, &uri, items, v.limits)?)
        }
        Some(_) => return Err(ctx.err("resources", Rule::ResourcesShape)),
    };
    Ok(SkillEntry {
        uri,
        frontmatter: frontmatter.clone(),
        resources,
        noted: None,
    })
}

fn string_field<'a>(
    ctx: &Ctx<'_>,
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, EntryError> {
    match obj.get(key) {
        None => Err(ctx.err(key, Rule::Missing)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ctx.err(
            key,
            Rule::WrongType {
                expected: "a string",
            },
        )),
    }
}

fn check_frontmatter(
    ctx: &Ctx<'_>,
    uri: &SkillUri,
    fm: &Map<String, Value>,
    v: &Validation,
) -> Result<(), EntryError> {
    let name = match fm.get("name") {
        None => return Err(ctx.err("frontmatter.name", Rule::Missing)),
        Some(Value::String(s)) => s,
        Some(_) => {
            return Err(ctx.err(
                "frontmatter.name",
                Rule::WrongType {
                    expected: "a string",
                },
            ));
        }
    };
    check_name(name).map_err(|why| ctx.err("frontmatter.name", Rule::Name { why }))?;
    if uri.name_segment() != name {
        return Err(ctx.err(
            "frontmatter.name",
            Rule::NameMismatch {
                segment: uri.name_segment().to_owned(),
                name: name.clone(),
            },
        ));
    }
    let description = match fm.get("description") {
        None => return Err(ctx.err("frontmatter.description", Rule::Missing)),
        Some(Value::String(s)) => s,
        Some(_) => {
            return Err(ctx.err(
                "frontmatter.description",
                Rule::WrongType {
                    expected: "a string",
                },
            ));
        }
    };
    // Unicode scalar values, not bytes and not UTF-16 units (R-W6).
    let chars = description.chars().count();
    if !(1..=1024).contains(&chars) {
        return Err(ctx.err("frontmatter.description", Rule::DescriptionLength { chars }));
    }
    if v.strict {
        match fm.get("metadata") {
            None => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => {
                return Err(ctx.err(
                    "frontmatter.metadata",
                    Rule::Strict {
                        why: "metadata must map strings to strings",
                    },
                ));
            }
        }
        if fm.get("allowed-tools").is_some_and(|t| !t.is_string()) {
            return Err(ctx.err(
                "frontmatter.allowed-tools",
                Rule::Strict {
                    why: "allowed-tools must be a string",
                },
            ));
        }
    }
    Ok(())
}

/// The Agent Skills naming rule: 1–64 of `a-z`, `0-9`, `-`; no leading, trailing or double `-`.
pub(crate) fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 64 {
        return Err("must be 1 to 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("may contain only lowercase letters, digits and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must not start or end with '-'");
    }
    if name.contains("--") {
        return Err("must not contain '--'");
    }
    Ok(())
}

fn manifest(
    ctx: &Ctx<'_>,
    skill: &SkillUri,
    items: &[Value],
    limits: Limits,
) -> Result<Manifest, EntryError> {
    let declined = |limit, declared, max| EntryError::LimitExceeded {
        origin: None,
        skill: skill.clone(),
        limit,
        declared,
        max,
    };
    // Counted before anything else is looked at: a hostile listing of a million files costs
    // one comparison (R-W7).
    let count = items.len() as u64;
    if count > limits.max_files() {
        return Err(declined(Limit::Files, count, limits.max_files()));
    }
    let mut files = Vec::with_capacity(items.len());
    let mut seen = HashSet::with_capacity(items.len());
    let mut total: u64 = 0;
    for (i, item) in items.iter().enumerate() {
        let file = manifest_file(ctx, skill, i, item, &mut seen)?;
        total = total.saturating_add(file.size);
        files.push(file);
    }
    if !seen.contains(skill.canonical()) {
        return Err(ctx.err("resources", Rule::MissingSkillMd));
    }
    if total > limits.max_total_bytes() {
        return Err(declined(Limit::TotalBytes, total, limits.max_total_bytes()));
    }
    files.sort_by(|a, b| a.uri.cmp(&b.uri));
    let binding = Binding::of(&files);
    Ok(Manifest {
        files,
        total_bytes: total,
        binding,
    })
}

/// `resources[i]`: an object with a URI inside the skill (or its `SKILL.md`), listed once, a
/// digest and a size (R-W1…R-W4). `seen` holds the canonical URIs listed before it.
fn manifest_file(
    ctx: &Ctx<'_>,
    skill: &SkillUri,
    i: usize,
    item: &Value,
    seen: &mut HashSet<String>,
) -> Result<ManifestFile, EntryError> {
    let field = |k: &str| format!("resources[{i}].{k}");
    let string = |k: &str| match item.get(k) {
        None => Err(ctx.err(field(k), Rule::Missing)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ctx.err(
            field(k),
            Rule::WrongType {
                expected: "a string",
            },
        )),
    };
    if !item.is_object() {
        return Err(ctx.err(
            format!("resources[{i}]"),
            Rule::WrongType {
                expected: "an object",
            },
        ));
    }
    let uri_text = string("uri")?;
    let uri = FileUri::parse(uri_text).map_err(|e| ctx.err(field("uri"), e.rule))?;
    if &uri != skill.file() && !skill.contains(&uri) {
        return Err(ctx.err(
            field("uri"),
            Rule::OutsideRoot {
                root: skill.root().to_owned(),
            },
        ));
    }
    if !seen.insert(uri.canonical().to_owned()) {
        return Err(ctx.err(
            field("uri"),
            Rule::DuplicateUri {
                uri: uri_text.clone(),
            },
        ));
    }
    let digest: Digest = string("digest")?.parse().map_err(|e| match e {
        EntryError::Digest { rule, .. } => ctx.err(field("digest"), rule),
        other => other,
    })?;
    let size = match item.get("size") {
        None => return Err(ctx.err(field("size"), Rule::Missing)),
        // `as_u64` is `None` for negatives and for any number written with a fraction or an
        // exponent, so `1.5`, `-1` and `1e3` are all refused here (R-W2).
        Some(Value::Number(n)) => n.as_u64().filter(|&s| s <= MAX_SIZE),
        Some(_) => None,
    }
    .ok_or_else(|| ctx.err(field("size"), Rule::SizeRange))?;
    Ok(ManifestFile { uri, digest, size })
}
