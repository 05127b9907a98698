//! The builder options a binding takes, read once: every choice by the library's own names,
//! every size, count and duration checked the same way, every default the library's.

use std::path::PathBuf;
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;

use skillcache::entry::{Limits, Validation};
use skillcache::error::ConfigError;
use skillcache::{ApprovalPolicy, DynamicPolicy, Error, Isolation, LockFile, SkillCacheBuilder};

/// How a binding spells option names and values: `request_timeout` and `not_required` in
/// Python, `requestTimeout` and `notRequired` in Node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `snake_case`: the library's own spelling.
    Snake,
    /// `camelCase`.
    Camel,
}

impl Case {
    /// `name` (in snake case) as this case spells it.
    #[must_use]
    pub fn spell(self, name: &str) -> String {
        match self {
            Case::Snake => name.to_owned(),
            Case::Camel => {
                let mut out = String::with_capacity(name.len());
                let mut upper = false;
                for c in name.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
        }
    }
}

/// How a binding names things in its refusals: its case, and how its language quotes a string
/// (Python's `repr`, JSON's quotes in Node), so a refusal reads as the host's own language would
/// write it.
pub struct Spelling<'a> {
    /// The case of option names and choice values.
    pub case: Case,
    /// Quotes a string as the language writes it.
    pub quote: &'a dyn Fn(&str) -> String,
}

/// Every builder option a binding offers, by its name in snake case.
pub const OPTIONS: &[&str] = &[
    "root",
    "key_file",
    "isolation",
    "approval",
    "dynamic",
    "memory_tier",
    "origin_quota",
    "offline",
    "allow_stale",
    "locked",
    "principal",
    "request_timeout",
    "connect_timeout",
    "lock_timeout",
    "max_files",
    "max_total_bytes",
    "strict",
    "discovery_paths",
];

/// A number as the host's language gives it: Python's `int` exactly, a JS number as a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A whole number, exactly.
    Int(i128),
    /// A floating-point number.
    Float(f64),
}

/// Every option as the binding read it from its language, before any rule: `None` (or `false`,
/// or empty) where the host gave nothing, which means the library's default.
#[derive(Default)]
pub struct Options {
    /// The cache root.
    pub root: Option<PathBuf>,
    /// The host key file.
    pub key_file: Option<PathBuf>,
    /// `rehash` or `guaranteed`.
    pub isolation: Option<String>,
    /// `required` or `not_required`.
    pub approval: Option<String>,
    /// `decline` or `allow_unverified`.
    pub dynamic: Option<String>,
    /// Bytes of the memory tier.
    pub memory_tier: Option<Number>,
    /// Bytes each origin may take on disk.
    pub origin_quota: Option<Number>,
    /// Offline mode.
    pub offline: bool,
    /// Stale entries allowed offline.
    pub allow_stale: bool,
    /// The lock file put in force.
    pub locked: Option<LockFile>,
    /// The principal.
    pub principal: Option<String>,
    /// Seconds.
    pub request_timeout: Option<f64>,
    /// Seconds.
    pub connect_timeout: Option<f64>,
    /// Seconds.
    pub lock_timeout: Option<f64>,
    /// The most files a skill may list.
    pub max_files: Option<Number>,
    /// The most bytes a skill's files may total.
    pub max_total_bytes: Option<Number>,
    /// The strict Agent Skills rules.
    pub strict: bool,
    /// The host's own skill folders.
    pub discovery_paths: Vec<PathBuf>,
}

/// What a binding opens, and the limits its sources' message bound follows.
pub struct Opened {
    /// The builder, every option applied; the binding opens it (off its interpreter's lock).
    pub builder: SkillCacheBuilder,
    /// The limits given; `None` for the library's baseline.
    pub limits: Option<Limits>,
}

fn invalid(what: String) -> Error {
    Error::Config(ConfigError::Invalid { what })
}

/// One of `choices`, named as the binding spells it.
///
/// # Errors
/// [`ConfigError::Invalid`] naming the option, every choice and what was given.
pub fn choice<T: Copy + ToString + FromStr>(
    option: &str,
    given: &str,
    choices: &[T],
    spelling: &Spelling<'_>,
) -> Result<T, Error> {
    let found = choices
        .iter()
        .find(|c| spelling.case.spell(&c.to_string()) == given);
    found.copied().ok_or_else(|| {
        let names: Vec<String> = choices
            .iter()
            .map(|c| (spelling.quote)(&spelling.case.spell(&c.to_string())))
            .collect();
        invalid(format!(
            "{} must be one of {}, not {}",
            spelling.case.spell(option),
            names.join(", "),
            (spelling.quote)(given)
        ))
    })
}

/// A duration in seconds.
///
/// # Errors
/// [`ConfigError::Invalid`] for a negative, infinite or NaN number.
pub fn seconds(option: &str, s: f64, spelling: &Spelling<'_>) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        invalid(format!(
            "{} must be a non-negative number of seconds, not {s}",
            spelling.case.spell(option)
        ))
    })
}

/// A count of files or bytes: whole and not negative; past `u64::MAX` it saturates.
///
/// # Errors
/// [`ConfigError::Invalid`] for a negative, fractional or NaN number.
pub fn count(option: &str, n: Number, spelling: &Spelling<'_>) -> Result<u64, Error> {
    let refuse = |shown: String| {
        invalid(format!(
            "{} must be a whole number, not negative, not {shown}",
            spelling.case.spell(option)
        ))
    };
    match n {
        Number::Int(i) if i < 0 => Err(refuse(i.to_string())),
        Number::Int(i) => Ok(u64::try_from(i).unwrap_or(u64::MAX)),
        Number::Float(f) if f.is_nan() || f < 0.0 || f.fract() != 0.0 => Err(refuse(f.to_string())),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Number::Float(f) => Ok(f as u64),
    }
}

/// `max_files` and `max_total_bytes`: `None` when neither is given (the library's baseline); the
/// baseline's value for the one not given.
///
/// # Errors
/// As [`count`], and [`Limits::new`]'s refusal of less than the baseline.
pub fn limits(
    max_files: Option<Number>,
    max_total_bytes: Option<Number>,
    spelling: &Spelling<'_>,
) -> Result<Option<Limits>, Error> {
    let files = max_files
        .map(|n| count("max_files", n, spelling))
        .transpose()?;
    let bytes = max_total_bytes
        .map(|n| count("max_total_bytes", n, spelling))
        .transpose()?;
    if files.is_none() && bytes.is_none() {
        return Ok(None);
    }
    let baseline = Limits::default();
    Limits::new(
        files.unwrap_or(baseline.max_files()),
        bytes.unwrap_or(baseline.max_total_bytes()),
    )
    .map(Some)
    .map_err(Error::Config)
}

const ISOLATIONS: [Isolation; 2] = [Isolation::Rehash, Isolation::Guaranteed];
const APPROVALS: [ApprovalPolicy; 2] = [ApprovalPolicy::Required, ApprovalPolicy::NotRequired];
const DYNAMICS: [DynamicPolicy; 2] = [DynamicPolicy::Decline, DynamicPolicy::AllowUnverified];

/// The three choices, where given.
fn policies(
    mut b: SkillCacheBuilder,
    o: &Options,
    spelling: &Spelling<'_>,
) -> Result<SkillCacheBuilder, Error> {
    if let Some(i) = &o.isolation {
        b = b.isolation(choice("isolation", i, &ISOLATIONS, spelling)?);
    }
    if let Some(a) = &o.approval {
        b = b.approval(choice("approval", a, &APPROVALS, spelling)?);
    }
    if let Some(d) = &o.dynamic {
        b = b.dynamic(choice("dynamic", d, &DYNAMICS, spelling)?);
    }
    Ok(b)
}

/// The three deadlines, where given.
fn deadlines(
    mut b: SkillCacheBuilder,
    o: &Options,
    spelling: &Spelling<'_>,
) -> Result<SkillCacheBuilder, Error> {
    if let Some(s) = o.request_timeout {
        b = b.request_timeout(seconds("request_timeout", s, spelling)?);
    }
    if let Some(s) = o.connect_timeout {
        b = b.connect_timeout(seconds("connect_timeout", s, spelling)?);
    }
    if let Some(s) = o.lock_timeout {
        b = b.lock_timeout(seconds("lock_timeout", s, spelling)?);
    }
    Ok(b)
}

/// Every option applied to a new builder, each checked, the library's default where none is
/// given.
///
/// # Errors
/// [`ConfigError::Invalid`] for the first option refused, named as the binding spells it.
pub fn builder(o: Options, spelling: &Spelling<'_>) -> Result<Opened, Error> {
    let limits = limits(o.max_files, o.max_total_bytes, spelling)?;
    let mut b = policies(skillcache::SkillCache::builder(), &o, spelling)?;
    b = deadlines(b, &o, spelling)?
        .offline(o.offline)
        .allow_stale(o.allow_stale);
    if let Some(n) = o.memory_tier {
        b = b.memory_tier(count("memory_tier", n, spelling)?);
    }
    if let Some(n) = o.origin_quota {
        b = b.origin_quota(count("origin_quota", n, spelling)?);
    }
    if let Some(root) = o.root {
        b = b.root(root);
    }
    if let Some(key) = o.key_file {
        b = b.key_file(key);
    }
    if let Some(lock) = o.locked {
        b = b.locked(lock);
    }
    if let Some(p) = o.principal {
        b = b.principal(p);
    }
    for path in o.discovery_paths {
        b = b.discovery_path(path);
    }
    let mut validation = Validation::default().strict(o.strict);
    if let Some(limits) = limits {
        validation = validation.limits(limits);
    }
    Ok(Opened {
        builder: b.validation(validation),
        limits,
    })
}

/// Where a stdio server's stderr goes, as the host named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// This process's own stderr (the default), through skillcache: it passes every byte on as
    /// it arrives and names the server's last line when the server exits before answering.
    Inherit,
    /// Nowhere.
    Ignore,
    /// One of the host's open file descriptors, reopened for appending.
    Descriptor(i64),
}

/// The [`Stdio`] for `target`.
///
/// # Errors
/// [`ConfigError::Invalid`] for a negative descriptor, or one the system cannot reopen.
pub fn stderr(target: Stderr) -> Result<Stdio, Error> {
    match target {
        Stderr::Inherit => Ok(Stdio::piped()),
        Stderr::Ignore => Ok(Stdio::null()),
        Stderr::Descriptor(fd) => {
            let fd = u32::try_from(fd)
                .map_err(|_| invalid(format!("stderr: {fd} is not a file descriptor")))?;
            skillcache::source::stderr_to_descriptor(fd).map_err(|e| {
                invalid(format!(
                    "cannot send the server's stderr to file descriptor {fd}: {e}"
                ))
            })
        }
    }
}
