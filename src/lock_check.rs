//! `LockCheck`: whether every server still publishes exactly what a lock pins — the gate a CI
//! job runs (`skillcache lock --check`) before it lets a change through.
//!
//! Pure, like [`Catalog::from_listings`](crate::Catalog::from_listings): it compares a lock with
//! the listings [`SkillCache::check_lock`](crate::SkillCache::check_lock) gathered. No file is
//! fetched for it: a listing's entries carry every file's URI, digest and size, which is all a
//! lock pins, so the check is as strong as a load of every pinned file would be and costs one
//! `skills/list` per origin.
//!
//! What counts as drift, per pinned origin:
//! - a pinned skill whose files differ (a file added, removed, or with another digest or size),
//!   that became dynamic, or whose pinned binding no longer matches its files (an edited lock);
//! - a pinned skill the server no longer lists, or lists with an entry that is refused;
//! - a skill the server lists that is not pinned (a lock made with `lock --all` is then out of
//!   date). A dynamic one is not drift — it has no digests to pin, and a locked `load` declines
//!   it — but it is reported beside the drift, so nothing the server offers goes unsaid;
//! - an origin that could not be listed (not connected, unreachable, or a malformed listing).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::digest::Digest;
use crate::entry::info::EntryInfo;
use crate::entry::{Binding, SkillEntry};
use crate::error::{EntryError, Error, SourceError};
use crate::lockfile::{LockFile, LockedSkill};
use crate::origin::Origin;
use crate::uri::{FileUri, SkillUri};

/// One file that differs from its pin: `pinned` is `None` for a file added since, `now` is `None`
/// for a file no longer listed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileDrift {
    /// The file.
    pub uri: FileUri,
    /// Its pinned digest and size.
    pub pinned: Option<(Digest, u64)>,
    /// Its digest and size as listed now.
    pub now: Option<(Digest, u64)>,
}

/// One way in which a server's listing differs from a lock (see [`LockCheck`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum LockDrift {
    /// A pinned skill whose files changed: every file added, removed or changed, by URI.
    Files {
        /// The origin.
        origin: Origin,
        /// The skill.
        skill: SkillUri,
        /// What differs, file by file.
        files: Vec<FileDrift>,
    },
    /// A pinned skill that is now dynamic (no digests: nothing of it can match the pin).
    BecameDynamic {
        /// The origin.
        origin: Origin,
        /// The skill.
        skill: SkillUri,
    },
    /// A pinned skill whose files match but whose pinned binding does not (the lock was edited).
    Binding {
        /// The origin.
        origin: Origin,
        /// The skill.
        skill: SkillUri,
        /// The binding the lock holds.
        pinned: Binding,
        /// The binding of the pinned files, as listed now.
        now: Binding,
    },
    /// A pinned skill the server no longer lists.
    Removed {
        /// The origin.
        origin: Origin,
        /// The skill.
        skill: SkillUri,
    },
    /// A skill the server lists that the lock does not pin.
    Added {
        /// The origin.
        origin: Origin,
        /// The skill.
        skill: SkillUri,
    },
    /// An entry of the listing that is refused (a pinned skill's among them, when its URI could
    /// be read): what a locked `load` would refuse too.
    Refused {
        /// The origin.
        origin: Origin,
        /// The skill, when the refusal names one that parses.
        skill: Option<SkillUri>,
        /// Why it was refused.
        error: Box<Error>,
    },
    /// The origin could not be listed.
    Unlisted {
        /// The origin.
        origin: Origin,
        /// Why.
        error: Box<Error>,
    },
}

impl LockDrift {
    /// The origin it concerns.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        match self {
            LockDrift::Files { origin, .. }
            | LockDrift::BecameDynamic { origin, .. }
            | LockDrift::Binding { origin, .. }
            | LockDrift::Removed { origin, .. }
            | LockDrift::Added { origin, .. }
            | LockDrift::Refused { origin, .. }
            | LockDrift::Unlisted { origin, .. } => origin,
        }
    }

    /// Its kind as a stable name, for a report a program reads (`lock --check --json`, the
    /// bindings): `files`, `became_dynamic`, `binding`, `removed`, `added`, `refused`,
    /// `unlisted`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            LockDrift::Files { .. } => "files",
            LockDrift::BecameDynamic { .. } => "became_dynamic",
            LockDrift::Binding { .. } => "binding",
            LockDrift::Removed { .. } => "removed",
            LockDrift::Added { .. } => "added",
            LockDrift::Refused { .. } => "refused",
            LockDrift::Unlisted { .. } => "unlisted",
        }
    }

    /// The files that differ from their pins: those of [`LockDrift::Files`], none for the rest.
    #[must_use]
    pub fn files(&self) -> &[FileDrift] {
        match self {
            LockDrift::Files { files, .. } => files,
            _ => &[],
        }
    }

    /// The skill it concerns, if one.
    #[must_use]
    pub fn skill(&self) -> Option<&SkillUri> {
        match self {
            LockDrift::Files { skill, .. }
            | LockDrift::BecameDynamic { skill, .. }
            | LockDrift::Binding { skill, .. }
            | LockDrift::Removed { skill, .. }
            | LockDrift::Added { skill, .. } => Some(skill),
            LockDrift::Refused { skill, .. } => skill.as_ref(),
            LockDrift::Unlisted { .. } => None,
        }
    }
}

/// A digest and size as a person reads them: `sha256:… (12 bytes)`.
struct Pin<'a>(&'a (Digest, u64));

impl fmt::Display for Pin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (digest, size) = self.0;
        write!(f, "{digest} ({size} bytes)")
    }
}

impl fmt::Display for FileDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.pinned, &self.now) {
            (None, Some(now)) => write!(f, "{} added: {}", self.uri, Pin(now)),
            (Some(was), None) => write!(f, "{} removed (was {})", self.uri, Pin(was)),
            (Some(was), Some(now)) => {
                write!(f, "{} changed: {} -> {}", self.uri, Pin(was), Pin(now))
            }
            (None, None) => write!(f, "{} unchanged", self.uri),
        }
    }
}

// URIs and origins are display-safe by construction (their own `Display`); errors carry their
// own display-safe messages.
impl fmt::Display for LockDrift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockDrift::Files {
                origin,
                skill,
                files,
            } => {
                write!(
                    f,
                    "{skill} from origin {origin}: files differ from the lock: "
                )?;
                for (i, file) in files.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "; " };
                    write!(f, "{sep}{file}")?;
                }
                Ok(())
            }
            LockDrift::BecameDynamic { origin, skill } => write!(
                f,
                "{skill} from origin {origin} is now dynamic: it has no digests to match the lock"
            ),
            LockDrift::Binding {
                origin,
                skill,
                pinned,
                now,
            } => write!(
                f,
                "{skill} from origin {origin}: the lock's binding {pinned} does not match its \
                 files ({now}); the lock was edited: lock the skill again"
            ),
            LockDrift::Removed { origin, skill } => write!(
                f,
                "{skill} from origin {origin} is pinned but no longer listed by the server"
            ),
            LockDrift::Added { origin, skill } => write!(
                f,
                "{skill} from origin {origin} is listed by the server but not pinned"
            ),
            LockDrift::Refused {
                origin,
                skill: Some(skill),
                error,
            } => {
                write!(f, "{skill} from origin {origin} is refused: ")?;
                with_causes(f, error)
            }
            LockDrift::Refused {
                origin,
                skill: None,
                error,
            } => {
                write!(f, "an entry from origin {origin} is refused: ")?;
                with_causes(f, error)
            }
            LockDrift::Unlisted { origin, error } => {
                write!(f, "origin {origin} could not be listed: ")?;
                with_causes(f, error)
            }
        }
    }
}

/// `error` and its cause chain, joined by `: `: a drift is a line a person reads in a CI log,
/// where "the connection to the server failed" alone does not say what to fix. Each cause is
/// made display-safe and cut (a transport's or the system's text may hold anything a server
/// sent, of any length).
fn with_causes(f: &mut fmt::Formatter<'_>, error: &Error) -> fmt::Result {
    write!(f, "{error}")?;
    let mut cause = std::error::Error::source(error);
    while let Some(c) = cause {
        write!(f, ": {}", crate::display::display_cut_bare(&c.to_string()))?;
        cause = c.source();
    }
    Ok(())
}

/// One origin's listing, as [`SkillCache::list`](crate::SkillCache::list) returns it: `Err` when
/// it could not be listed, each refused entry `Err` in its slot.
pub type Listed = Result<Vec<Result<EntryInfo, Error>>, Error>;

/// What [`SkillCache::check_lock`](crate::SkillCache::check_lock) found: every drift, in the
/// order of the lock (origin, then skill URI), and the dynamic skills listed beside the pins.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct LockCheck {
    /// How many skills the lock pins.
    pub pinned: usize,
    /// How many of them matched their pin exactly.
    pub matched: usize,
    /// Every difference found.
    pub drift: Vec<LockDrift>,
    /// Dynamic skills the servers list: not drift (nothing of them can be pinned, and a locked
    /// `load` declines them), reported so that a reviewer sees them.
    pub dynamic: Vec<(Origin, SkillUri)>,
}

impl LockCheck {
    /// Whether every pinned origin publishes exactly what the lock pins, and nothing more.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.drift.is_empty()
    }

    /// Compares `lock` with the listings of the origins it pins, each as
    /// [`SkillCache::list`](crate::SkillCache::list) returned it (`Err` for an origin that could
    /// not be listed; a refused entry `Err` in its slot). A pinned origin with no listing here
    /// is drift too ([`LockDrift::Unlisted`], not connected); a listing of an origin the lock
    /// does not pin reports every skill it lists as added. This is the pure half of
    /// [`SkillCache::check_lock`](crate::SkillCache::check_lock), for a host that gathers the
    /// listings itself (bounding how many servers run at once, as the CLI's `--jobs` does).
    #[must_use]
    pub fn from_listings(lock: &LockFile, listings: Vec<(Origin, Listed)>) -> LockCheck {
        let mut listings: BTreeMap<Origin, Listed> = listings.into_iter().collect();
        let pinned: BTreeSet<&Origin> = lock.skills().map(LockedSkill::origin).collect();
        for origin in pinned {
            listings.entry(origin.clone()).or_insert_with(|| {
                Err(Error::Source(SourceError::NotConnected {
                    origin: origin.clone(),
                }))
            });
        }
        let mut check = LockCheck::default();
        for (origin, listed) in listings {
            let pins: BTreeMap<&str, &LockedSkill> = lock
                .skills()
                .filter(|s| s.origin() == &origin)
                .map(|s| (s.uri().canonical(), s))
                .collect();
            check.pinned += pins.len();
            match listed {
                Ok(listed) => {
                    let entries = listed.into_iter().map(|r| r.map(|info| info.entry));
                    check.origin(&origin, &pins, entries.collect());
                }
                Err(error) => check.drift.push(LockDrift::Unlisted {
                    origin,
                    error: Box::new(error),
                }),
            }
        }
        check
    }

    /// One origin's listing against its pins.
    fn origin(
        &mut self,
        origin: &Origin,
        pins: &BTreeMap<&str, &LockedSkill>,
        listed: Vec<Result<SkillEntry, Error>>,
    ) {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut added = Vec::new();
        for item in listed {
            let entry = match item {
                Ok(entry) => entry,
                Err(error) => {
                    let skill = refused_skill(&error);
                    if let Some(pin) = skill
                        .as_ref()
                        .and_then(|s| pins.get_key_value(s.canonical()))
                    {
                        seen.insert(pin.0);
                    }
                    self.drift.push(LockDrift::Refused {
                        origin: origin.clone(),
                        skill,
                        error: Box::new(error),
                    });
                    continue;
                }
            };
            match pins.get_key_value(entry.uri().canonical()) {
                Some((key, pin)) => {
                    seen.insert(key);
                    match against_pin(origin, pin, &entry) {
                        Some(drift) => self.drift.push(drift),
                        None => self.matched += 1,
                    }
                }
                None if entry.is_dynamic() => {
                    self.dynamic.push((origin.clone(), entry.uri().clone()));
                }
                None => added.push(entry.uri().clone()),
            }
        }
        for (key, pin) in pins {
            if !seen.contains(key) {
                self.drift.push(LockDrift::Removed {
                    origin: origin.clone(),
                    skill: pin.uri().clone(),
                });
            }
        }
        self.drift
            .extend(added.into_iter().map(|skill| LockDrift::Added {
                origin: origin.clone(),
                skill,
            }));
    }
}

/// The skill a refused entry names, when it names one that parses.
fn refused_skill(error: &Error) -> Option<SkillUri> {
    match error {
        Error::Entry(EntryError::Invalid {
            skill: Some(uri), ..
        }) => SkillUri::parse(uri).ok(),
        _ => None,
    }
}

/// How `entry` differs from `pin`, if it does.
fn against_pin(origin: &Origin, pin: &LockedSkill, entry: &SkillEntry) -> Option<LockDrift> {
    let (origin, skill) = (origin.clone(), entry.uri().clone());
    let Some(manifest) = entry.manifest() else {
        return Some(LockDrift::BecameDynamic { origin, skill });
    };
    let pinned: BTreeMap<&str, (&FileUri, (Digest, u64))> = pin
        .files()
        .map(|(uri, digest, size)| (uri.canonical(), (uri, (digest, size))))
        .collect();
    let mut files = Vec::new();
    for f in manifest.files() {
        let now = (f.digest(), f.size());
        match pinned.get(f.uri().canonical()) {
            None => files.push(FileDrift {
                uri: f.uri().clone(),
                pinned: None,
                now: Some(now),
            }),
            Some((_, was)) if *was != now => files.push(FileDrift {
                uri: f.uri().clone(),
                pinned: Some(*was),
                now: Some(now),
            }),
            Some(_) => {}
        }
    }
    for (uri, was) in pinned.values() {
        if manifest.file(uri).is_none() {
            files.push(FileDrift {
                uri: (*uri).clone(),
                pinned: Some(*was),
                now: None,
            });
        }
    }
    if !files.is_empty() {
        files.sort_by(|a, b| a.uri.as_str().cmp(b.uri.as_str()));
        return Some(LockDrift::Files {
            origin,
            skill,
            files,
        });
    }
    match entry.binding() {
        Some(now) if now != pin.binding() => Some(LockDrift::Binding {
            origin,
            skill,
            pinned: pin.binding(),
            now,
        }),
        _ => None,
    }
}

// What `lock --check --json` prints and both packages read: one shape, written here once.
// A pin is `{digest, size}` or `null`; a drift carries its `kind`, its origin and skill, and
// its message as a person reads it; a dynamic skill beside the pins is `{origin, skill}`.

impl serde::Serialize for FileDrift {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Pin<'a> {
            digest: &'a Digest,
            size: u64,
        }
        fn pin(p: Option<&(Digest, u64)>) -> Option<Pin<'_>> {
            p.map(|(digest, size)| Pin {
                digest,
                size: *size,
            })
        }
        let mut out = s.serialize_struct("FileDrift", 3)?;
        out.serialize_field("uri", self.uri.as_str())?;
        out.serialize_field("pinned", &pin(self.pinned.as_ref()))?;
        out.serialize_field("now", &pin(self.now.as_ref()))?;
        out.end()
    }
}

impl serde::Serialize for LockDrift {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("LockDrift", 5)?;
        out.serialize_field("kind", self.kind())?;
        out.serialize_field("origin", self.origin())?;
        out.serialize_field("skill", &self.skill())?;
        out.serialize_field("message", &self.to_string())?;
        out.serialize_field("files", self.files())?;
        out.end()
    }
}

impl serde::Serialize for LockCheck {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Dynamic<'a> {
            origin: &'a Origin,
            skill: &'a SkillUri,
        }
        let dynamic: Vec<Dynamic<'_>> = self
            .dynamic
            .iter()
            .map(|(origin, skill)| Dynamic { origin, skill })
            .collect();
        let mut out = s.serialize_struct("LockCheck", 5)?;
        out.serialize_field("pinned", &self.pinned)?;
        out.serialize_field("matched", &self.matched)?;
        out.serialize_field("is_clean", &self.is_clean())?;
        out.serialize_field("drift", &self.drift)?;
        out.serialize_field("dynamic", &dynamic)?;
        out.end()
    }
}
