//! `Catalog`: the skills of every bound origin in one view (R-Q1), each under a *handle* a host
//! shows the model and the user and looks the skill up by.
//!
//! A skill's identity is (origin, URI) (R-O1); its `name` is only a label (R-O3). The spec's
//! rules for names (SEP-2640, Names; Security Considerations, name collisions) are what the
//! handles carry out:
//!
//! - names within one listing may repeat: both skills are kept, told apart by path;
//! - names across origins resolve within a per-origin namespace, by the host's label;
//! - an MCP-served skill never silently shadows, or stands in for, a same-named skill of another
//!   origin — another server's or the host's own filesystem skills — and collisions are surfaced.
//!
//! The handle of a skill is:
//!
//! | the skill's `name` is … | handle | example |
//! |---|---|---|
//! | unique in the catalog (no other origin, no local skill, no other path) | the name | `refunds` |
//! | shared by two skills of its origin only | the skill's root URI | `skill://acme/billing/refunds` |
//! | shared with another origin or a local skill | `origin:` + the name | `docs:refunds` |
//! | both | `origin:` + the root URI | `docs:skill://acme/billing/refunds` |
//!
//! A local name is compared as a person reads it: after Unicode NFKC normalisation and lower-casing
//! (the Agent Skills names of MCP skills are already lower-case ASCII), so a local `Deploy`, or a
//! full-width `Ｄｅｐｌｏｙ`, collides with an MCP skill named `deploy`; the local skill keeps its
//! name as the host gave it.
//!
//! Handles are a function of what the catalog holds — the same skills and local names give the
//! same handles, in any listing order, in any process — so they are stable across runs. When a
//! collision appears, *every* party's handle is qualified: a bare name that used to mean one skill
//! then means none, instead of quietly meaning the newcomer. A local skill keeps its bare name
//! (the host's own namespace), so no MCP skill's handle ever equals it — nor differs from it
//! only in case or Unicode form (a bare MCP handle is a name no local name folds to).
//!
//! Why the handles cannot coincide: a name obeys the Agent Skills rule (`a-z`, `0-9`, `-`: no
//! `:` or `/`, R-W6) and local names may contain neither, so a bare handle has no `:` while every
//! qualified one does; a root URI ends in its skill's name after a `/`, while an `origin:name`
//! handle's last `/`-segment (if any) still holds the `:`; two `origin:` handles share a name only
//! if they share the origin (the text after the last `:` is the name, or a root URI, which holds
//! `//` only after its scheme since empty segments are refused, R-W4), and within one origin root
//! URIs are distinct (a listing refuses a repeated URI, R-W9).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::config_error::ConfigError;
use crate::entry::SkillEntry;
use crate::error::Error;
use crate::origin::Origin;

/// The skills of every origin bound to a [`SkillCache`](crate::SkillCache), as
/// [`SkillCache::catalog`](crate::SkillCache::catalog) lists them: each under a handle unique
/// across origins and stable across runs, with every collision reported (R-Q1).
///
/// ```
/// # use std::sync::Arc;
/// # use skillcache::{Origin, SkillCache};
/// # use skillcache::local::SkillServer;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), skillcache::Error> {
/// # let tmp = tempfile::tempdir().unwrap();
/// # for (server, path) in [("docs", "refunds"), ("team", "refunds"), ("team", "notes")] {
/// #     let dir = tmp.path().join(server).join(path);
/// #     std::fs::create_dir_all(&dir).unwrap();
/// #     let name = path.rsplit('/').next().unwrap();
/// #     std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: The {name} skill.\n---\n")).unwrap();
/// # }
/// let cache = SkillCache::builder()
///     .root(tmp.path().join("cache"))
///     .key_file(tmp.path().join("host.key"))
///     .open()?;
/// for label in ["docs", "team"] {
///     cache.connect(Origin::new(label)?, Arc::new(SkillServer::new(tmp.path().join(label))));
/// }
/// // The host's own filesystem skills take part by name.
/// let catalog = cache.catalog(&["notes"]).await?;
/// let handles: Vec<&str> = catalog.skills().iter().map(|s| s.handle()).collect();
/// assert_eq!(handles, ["docs:refunds", "team:notes", "team:refunds"]);
/// let refunds = catalog.get("docs:refunds").expect("listed");
/// assert_eq!(refunds.origin().as_str(), "docs");
/// assert_eq!(refunds.collides_with(), ["team:refunds"]);
/// // `notes` is the local skill's: the MCP one is qualified and says whom it collides with.
/// assert!(catalog.get("notes").is_none());
/// assert_eq!(catalog.get("team:notes").expect("listed").collides_with(), ["notes"]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Catalog {
    /// Sorted by origin, then by canonical URI.
    skills: Vec<CatalogSkill>,
    /// Handle → index into `skills`.
    by_handle: HashMap<String, usize>,
    /// What could not be listed, per origin.
    failures: Vec<(Origin, Error)>,
}

/// One skill of a [`Catalog`]: its handle, its origin and its entry, and the handles of every
/// other skill — or local skill — that shares its name.
#[derive(Debug, Clone)]
pub struct CatalogSkill {
    handle: String,
    origin: Origin,
    entry: SkillEntry,
    collides_with: Vec<String>,
}

/// How many origins [`SkillCache::catalog`](crate::SkillCache::catalog) lists at once: each listing
/// may start a server (a child process with its pipes), and hundreds started together exhaust a
/// process's file descriptors.
pub const CATALOG_LISTINGS_AT_ONCE: usize = 16;

/// What [`SkillCache::list`](crate::SkillCache::list) returned for one origin: its entries (each
/// valid or refused), or why it could not be listed.
pub type Listing = Result<Vec<Result<crate::entry::info::EntryInfo, Error>>, Error>;

impl Catalog {
    /// The catalog of listings the host gathered itself — each origin with what
    /// [`SkillCache::list`](crate::SkillCache::list) returned for it — and the host's own
    /// `local_names`, by the rules above (R-Q1). [`SkillCache::catalog`](crate::SkillCache::catalog)
    /// is this over every bound origin; a host that binds each server only for the time of its
    /// listing, so that hundreds of configured servers never run at once (the CLI's
    /// `list --all`), gathers the listings itself and builds the catalog here.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skillcache::{Catalog, Origin, SkillCache};
    /// # use skillcache::local::SkillServer;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), skillcache::Error> {
    /// # let tmp = tempfile::tempdir().unwrap();
    /// # for server in ["docs", "team"] {
    /// #     let dir = tmp.path().join(server).join("deploy");
    /// #     std::fs::create_dir_all(&dir).unwrap();
    /// #     std::fs::write(dir.join("SKILL.md"), "---\nname: deploy\ndescription: Deploys.\n---\n").unwrap();
    /// # }
    /// let cache = SkillCache::builder()
    ///     .root(tmp.path().join("cache"))
    ///     .key_file(tmp.path().join("host.key"))
    ///     .open()?;
    /// let mut listings = Vec::new();
    /// for label in ["docs", "team"] {
    ///     let origin = Origin::new(label)?;
    ///     cache.connect(origin.clone(), Arc::new(SkillServer::new(tmp.path().join(label))));
    ///     let listed = cache.list(&origin).await;
    ///     cache.disconnect(&origin); // this server is not needed any more
    ///     listings.push((origin, listed));
    /// }
    /// let catalog = Catalog::from_listings(listings, &[])?;
    /// let handles: Vec<&str> = catalog.skills().iter().map(|s| s.handle()).collect();
    /// assert_eq!(handles, ["docs:deploy", "team:deploy"]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Only a local name that is empty or holds `:` or `/` (the marks of a qualified handle):
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid).
    pub fn from_listings(
        listings: impl IntoIterator<Item = (Origin, Listing)>,
        local_names: &[&str],
    ) -> Result<Catalog, Error> {
        let local = self::local_names(local_names)?;
        let (mut skills, mut failures) = (Vec::new(), Vec::new());
        for (origin, listed) in listings {
            match listed {
                Ok(slots) => {
                    for slot in slots {
                        match slot {
                            Ok(info) => skills.push((origin.clone(), info.entry)),
                            Err(e) => failures.push((origin.clone(), e)),
                        }
                    }
                }
                Err(e) => failures.push((origin, e)),
            }
        }
        Ok(build(skills, failures, &local))
    }

    /// Every listed skill, by origin label and then by URI.
    #[must_use]
    pub fn skills(&self) -> &[CatalogSkill] {
        &self.skills
    }

    /// The skill with this handle, exactly as [`CatalogSkill::handle`] spells it. A bare name
    /// finds nothing once the name collides (the colliding skills are all qualified), and a local
    /// skill's name never finds an MCP skill.
    #[must_use]
    pub fn get(&self, handle: &str) -> Option<&CatalogSkill> {
        self.by_handle.get(handle).map(|&i| &self.skills[i])
    }

    /// What could not be listed, each with its origin: an origin whose listing failed (its
    /// skills are absent from this catalog; the other origins' are not), or one entry of an
    /// origin that was refused (that skill alone is absent).
    #[must_use]
    pub fn failures(&self) -> &[(Origin, Error)] {
        &self.failures
    }
}

impl CatalogSkill {
    /// The handle: unique in the catalog, and the same whenever the catalog holds the same
    /// skills (the rules are in the [`Catalog`] docs).
    #[must_use]
    pub fn handle(&self) -> &str {
        &self.handle
    }

    /// The origin that serves it (the host's label, R-O1).
    #[must_use]
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Its entry, as the origin listed it: what [`SkillCache::approve`](crate::SkillCache::approve)
    /// and [`SkillCache::load`](crate::SkillCache::load) take.
    #[must_use]
    pub fn entry(&self) -> &SkillEntry {
        &self.entry
    }

    /// The handles of every other skill with the same `name` — of this origin at another path,
    /// of another origin, and every local skill whose name is this one but for case or Unicode
    /// form (NFKC; its handle is its name as the host gave it, e.g. `Deploy` for `deploy`) —
    /// sorted; empty when the name is unique.
    #[must_use]
    pub fn collides_with(&self) -> &[String] {
        &self.collides_with
    }
}

/// A name as a person compares it: NFKC, lower-cased, NFKC again (lower-casing can leave a text
/// that is no longer normalised). `Deploy`, `DEPLOY` and full-width `Ｄｅｐｌｏｙ` all fold to
/// `deploy`.
pub(crate) fn fold(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    let lower = name.nfkc().collect::<String>().to_lowercase();
    lower.nfkc().collect()
}

/// Checks the host's local skill names: non-empty, and without `:` or `/`, the characters that
/// mark a qualified handle, so that no local name can equal an MCP skill's handle — nor read as
/// one after folding (K8): a full-width `：` or `／` (U+FF1A, U+FF0F) is `:` or `/` under NFKC,
/// so `docs：refunds` would read as the handle `docs:refunds` and is refused as that is.
pub(crate) fn local_names(names: &[&str]) -> Result<BTreeSet<String>, ConfigError> {
    names
        .iter()
        .map(|&name| {
            if name.is_empty() || name.contains([':', '/']) || fold(name).contains([':', '/']) {
                Err(ConfigError::Invalid {
                    what: format!(
                        "a local skill name must be non-empty and contain no ':' or '/', nor a character Unicode NFKC reads as one such as a full-width colon (got {:?})",
                        crate::display::display_safe(name)
                    ),
                })
            } else {
                Ok(name.to_owned())
            }
        })
        .collect()
}

/// The catalog of `listed` skills (every origin's valid entries), `failures` and the host's
/// `local` names: assigns every handle (R-Q1).
pub(crate) fn build(
    mut listed: Vec<(Origin, SkillEntry)>,
    mut failures: Vec<(Origin, Error)>,
    local: &BTreeSet<String>,
) -> Catalog {
    listed.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| x.uri().cmp(y.uri())));
    failures.sort_by(|(a, _), (b, _)| a.cmp(b));
    // folded name → the local names that fold to it, sorted (K8: `Deploy` meets `deploy`).
    let mut locals: HashMap<String, Vec<&str>> = HashMap::new();
    for name in local {
        locals.entry(fold(name)).or_default().push(name);
    }
    // name → origin → how many skills of that origin carry it.
    let mut names: BTreeMap<&str, BTreeMap<&Origin, usize>> = BTreeMap::new();
    for (origin, entry) in &listed {
        *names
            .entry(entry.name())
            .or_default()
            .entry(origin)
            .or_default() += 1;
    }
    let handles: Vec<String> = listed
        .iter()
        .map(|(origin, entry)| {
            let name = entry.name();
            let per_origin = &names[name];
            let across = per_origin.len() > 1 || locals.contains_key(&fold(name));
            let within = per_origin[origin] > 1;
            let tail = if within { entry.uri().root() } else { name };
            if across {
                format!("{}:{tail}", origin.as_str())
            } else {
                tail.to_owned()
            }
        })
        .collect();
    // name → the handles of every party carrying it (the local skill's is its bare name).
    let mut parties: HashMap<&str, Vec<&str>> = HashMap::new();
    for ((_, entry), handle) in listed.iter().zip(&handles) {
        parties.entry(entry.name()).or_default().push(handle);
    }
    for (name, handles) in &mut parties {
        if let Some(own) = locals.get(&fold(name)) {
            handles.extend(own);
        }
        handles.sort_unstable();
    }
    let collides: Vec<Vec<String>> = listed
        .iter()
        .zip(&handles)
        .map(|((_, entry), own)| {
            parties[entry.name()]
                .iter()
                .filter(|h| **h != own.as_str())
                .map(|h| (*h).to_owned())
                .collect()
        })
        .collect();
    let skills: Vec<CatalogSkill> = listed
        .into_iter()
        .zip(handles)
        .zip(collides)
        .map(|(((origin, entry), handle), collides_with)| CatalogSkill {
            handle,
            origin,
            entry,
            collides_with,
        })
        .collect();
    let by_handle = skills
        .iter()
        .enumerate()
        .map(|(i, s)| (s.handle.clone(), i))
        .collect();
    Catalog {
        skills,
        by_handle,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use proptest::prelude::*;
    use serde_json::json;

    use super::{build, local_names};
    use crate::digest::Digest;
    use crate::entry::{SkillEntry, Validation};
    use crate::origin::Origin;

    fn entry(path: &str) -> SkillEntry {
        let name = path.rsplit('/').next().expect("a name");
        let uri = format!("skill://{path}/SKILL.md");
        let wire = json!({
            "uri": uri,
            "frontmatter": {"name": name, "description": "d"},
            "resources": [{"uri": uri, "digest": Digest::of(b"x").to_string(), "size": 1}],
        });
        SkillEntry::from_json(&wire, &Validation::default()).expect("valid fixture")
    }

    fn catalog(skills: &[(&str, &str)], local: &[&str]) -> super::Catalog {
        let listed = skills
            .iter()
            .map(|(o, p)| (Origin::new(*o).expect("label"), entry(p)))
            .collect();
        build(
            listed,
            Vec::new(),
            &local_names(local).expect("local names"),
        )
    }

    fn handles(c: &super::Catalog) -> Vec<&str> {
        c.skills().iter().map(super::CatalogSkill::handle).collect()
    }

    #[test]
    fn q1_every_form_of_handle_for_one_name() {
        // Two paths in `docs`, one in `team`, and a local skill: every form at once.
        let c = catalog(
            &[
                ("team", "refunds"),
                ("docs", "acme/support/refunds"),
                ("docs", "acme/billing/refunds"),
                ("docs", "notes"),
            ],
            &["refunds"],
        );
        assert_eq!(
            handles(&c),
            [
                "docs:skill://acme/billing/refunds",
                "docs:skill://acme/support/refunds",
                "notes",
                "team:refunds",
            ]
        );
        let billing = c.get("docs:skill://acme/billing/refunds").expect("found");
        assert_eq!(
            billing.collides_with(),
            [
                "docs:skill://acme/support/refunds",
                "refunds",
                "team:refunds"
            ]
        );
        assert!(c.get("notes").expect("found").collides_with().is_empty());
        assert!(
            c.get("refunds").is_none(),
            "the bare name is the local skill's"
        );
    }

    #[test]
    fn k8_a_local_name_collides_whatever_its_case_or_unicode_form() {
        for local in [
            "Deploy",
            "DEPLOY",
            "\u{FF24}\u{FF45}\u{FF50}\u{FF4C}\u{FF4F}\u{FF59}",
        ] {
            let c = catalog(&[("docs", "deploy"), ("docs", "notes")], &[local]);
            assert_eq!(handles(&c), ["docs:deploy", "notes"], "{local}");
            let deploy = c.get("docs:deploy").expect("qualified");
            assert_eq!(
                deploy.collides_with(),
                [local],
                "the local party by its own name"
            );
            assert!(
                c.get("deploy").is_none(),
                "{local}: no bare handle for a name a person reads as the local one"
            );
        }
        // Two local spellings of one name: both are parties.
        let c = catalog(&[("docs", "deploy")], &["Deploy", "deploy"]);
        assert_eq!(
            c.get("docs:deploy").expect("qualified").collides_with(),
            ["Deploy", "deploy"]
        );
        // A name that only looks alike after NFKC is still another name: `deploy-2` is not `deploy`.
        let c = catalog(&[("docs", "deploy-2")], &["Deploy"]);
        assert_eq!(handles(&c), ["deploy-2"]);
    }

    #[test]
    fn k8_fold_is_nfkc_then_lower_case() {
        assert_eq!(super::fold("Deploy"), "deploy");
        assert_eq!(
            super::fold("\u{212A}elvin"),
            "kelvin",
            "the Kelvin sign is a K"
        );
        assert_eq!(
            super::fold("\u{FB01}le"),
            "file",
            "a ligature is its letters"
        );
        assert_eq!(super::fold("ÉTÉ"), "été");
    }

    #[test]
    fn q1_local_names_that_could_pose_as_a_handle_are_refused() {
        for bad in ["", "docs:refunds", "skill://x/refunds", "a/b"] {
            assert!(local_names(&[bad]).is_err(), "{bad:?}");
        }
        assert!(local_names(&["My Skill", "notes"]).is_ok());
    }

    #[test]
    fn k8_a_local_name_that_folds_to_a_colon_or_slash_is_refused_as_a_handle_lookalike() {
        // Full-width and small colons and the full-width solidus are `:` and `/` under NFKC:
        // `docs：refunds` beside an MCP skill's `docs:refunds` reads as the same handle.
        for bad in ["docs\u{FF1A}refunds", "a\u{FF0F}b", "docs\u{FE55}refunds"] {
            assert!(local_names(&[bad]).is_err(), "{bad:?}");
        }
        // A full-width letter folds to a letter and is a name like any other.
        assert!(local_names(&["\u{FF44}eploy"]).is_ok());
    }

    /// Labels made of the handles' own punctuation (`:`, `/`, `skill:`) still give distinct
    /// handles, none equal to a local name.
    fn label() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "a", "b", "a:b", "a:skill", "skill", "skill:", "x://y", "a/b", ":", "::",
        ])
        .prop_map(str::to_owned)
    }

    fn path() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "refunds",
            "a/refunds",
            "b/refunds",
            "a/b/refunds",
            "notes",
            "skill/refunds",
            "a/notes",
            "b",
            "a/b",
        ])
        .prop_map(str::to_owned)
    }

    proptest! {
        #[test]
        fn q1_handles_are_unique_order_free_and_never_a_local_name(
            skills in prop::collection::vec((label(), path()), 0..12),
            local in prop::collection::vec(prop::sample::select(vec!["refunds", "notes", "b", "x", "Refunds", "NOTES", "\u{FF42}"]), 0..3),
        ) {
            // One origin lists a URI once (a repeated URI is refused by the listing).
            let mut seen = HashSet::new();
            let skills: Vec<(&str, &str)> = skills
                .iter()
                .filter(|(o, p)| seen.insert((o.clone(), p.clone())))
                .map(|(o, p)| (o.as_str(), p.as_str()))
                .collect();
            let c = catalog(&skills, &local);
            let all: Vec<&str> = handles(&c);
            let unique: BTreeSet<&str> = all.iter().copied().collect();
            prop_assert_eq!(unique.len(), all.len(), "{:?}", all);
            for h in &all {
                prop_assert!(!local.contains(h), "{} poses as a local skill", h);
                // K8: nor does a bare handle read as a local name to a person.
                prop_assert!(
                    h.contains(':') || h.contains('/') || !local.iter().any(|l| super::fold(l) == super::fold(h)),
                    "{} reads as a local skill", h
                );
            }
            let mut reversed = skills.clone();
            reversed.reverse();
            let again = catalog(&reversed, &local);
            prop_assert_eq!(handles(&again), all);
        }
    }
}
