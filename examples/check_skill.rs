//! What a host gets for a skill folder, shown with the public host API only (nothing here needs
//! the crate's `internals` feature).
//!
//! 1. [`local::inspect`] builds and validates the entry a server would publish for the folder:
//!    its URI, files, total size, content binding, and each file's digest, size and URI. A folder
//!    that is not a valid skill exits with code 4 and every problem.
//! 2. The folder is then served by [`SkillServer`] over the folder's parent (which it scans
//!    whole: every skill folder beside this one is served too) through a small [`SkillSource`]
//!    that can change its answers, and loaded through a fresh [`SkillCache`] (its own temporary
//!    root) three times:
//!    - honest: the load succeeds, and `SKILL.md` is verified (size, digest, frontmatter);
//!    - tampered: `resources/read` of `SKILL.md` answers one byte flipped at the same length, so
//!      the size check passes and the digest check fails: [`Error::Verify`], nothing stored;
//!    - drifted: `skills/get` lists the digest and size of a `SKILL.md` whose `description:` was
//!      edited, and `resources/read` serves exactly those bytes, but the entry's frontmatter is
//!      still the old one: the digest matches and the frontmatter check fails (R-V6).
//!
//! Each case asserts what it shows, so the example fails loudly if the behaviour changes.
//!
//! `cargo run --example check_skill [SKILL_FOLDER]` (default: `samples/skills/release-notes`).

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use skillcache::entry::Validation;
use skillcache::error::{Mismatch, VerifyError};
use skillcache::local::{self, SkillServer};
use skillcache::source::{SkillSource, SourceFuture};
use skillcache::{
    ApprovalPolicy, Digest, Error, LoadedSkill, Origin, SkillCache, SkillEntry, SkillUri,
    Verification,
};

type BoxError = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let arg = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/skills/release-notes"),
        PathBuf::from,
    );
    // Absolute, so `.` has a name and a relative folder has a parent to serve.
    let dir = std::fs::canonicalize(&arg).unwrap_or(arg);
    let name = dir
        .file_name()
        .ok_or("the folder has no name")?
        .to_string_lossy()
        .into_owned();

    // 1. The entry a server would publish for the folder, checked by the rules every entry is.
    let entry = match local::inspect(&dir, &format!("skill://{name}"), &Validation::default()) {
        Ok(entry) => entry,
        Err(problems) => {
            for p in &problems {
                eprintln!("not a valid skill: {p}");
            }
            std::process::exit(4);
        }
    };
    describe(&entry)?;

    // 2. The same folder served and loaded three times, each through a fresh cache.
    let folder = Folder {
        parent: dir.parent().ok_or("the folder has no parent")?.to_owned(),
        md: std::fs::read(dir.join("SKILL.md"))?,
        entry,
    };
    folder.honest().await?;
    folder.tampered().await?;
    folder.drifted().await?;
    Ok(())
}

/// Prints the entry: its URI, file count and total size, binding, and every file.
fn describe(entry: &SkillEntry) -> Result<(), BoxError> {
    let manifest = entry
        .manifest()
        .ok_or("a folder's entry always lists its files")?;
    println!("entry     {}", entry.uri());
    println!(
        "files     {} ({} bytes)",
        manifest.files().len(),
        manifest.total_bytes()
    );
    println!(
        "binding   {}",
        entry.binding().ok_or("an entry with files has a binding")?
    );
    for f in manifest.files() {
        println!("  {}  {:>7}  {}", f.digest(), f.size(), f.uri());
    }
    Ok(())
}

/// The inspected skill folder, to be served and loaded.
struct Folder {
    /// The folder's parent: the server publishes every skill folder under it.
    parent: PathBuf,
    /// The folder's `SKILL.md`, as it is on disk.
    md: Vec<u8>,
    /// The entry `local::inspect` built for it.
    entry: SkillEntry,
}

impl Folder {
    /// A server over the parent folder, changing what it says about this skill's `SKILL.md`:
    /// `served` instead of its bytes, the digest and size of `listed` instead of its own.
    fn source(&self, served: Option<Vec<u8>>, listed: Option<Vec<u8>>) -> Altered {
        Altered {
            server: SkillServer::new(&self.parent),
            skill_md: self.entry.uri().file().as_str().to_owned(),
            served,
            listed,
        }
    }

    /// Honest: what the server publishes is what inspect built, and the load succeeds.
    async fn honest(&self) -> Result<(), BoxError> {
        let trial = load_through(self.source(None, None), self.entry.uri()).await?;
        assert_eq!(
            trial.entry, self.entry,
            "the server publishes the inspected entry"
        );
        let skill = trial.loaded?;
        let file = skill.skill_md();
        let listed = self
            .entry
            .file(self.entry.uri().file())
            .ok_or("SKILL.md is always listed")?;
        let Verification::Verified(digest) = file.verification() else {
            return Err("a SKILL.md with a listed digest is verified".into());
        };
        assert_eq!(digest, listed.digest());
        assert_eq!(file.bytes(), self.md.as_slice());
        assert_eq!(file.bytes().len() as u64, listed.size());
        println!(
            "honest    loaded: SKILL.md verified on arrival (size {} as listed, digest as listed, \
             frontmatter equal to the entry's)",
            listed.size()
        );
        println!("          Verification::Verified({digest})");
        // `load` fetches the SKILL.md alone; other files come on `read`.
        assert_eq!(trial.blobs, 1, "the verified SKILL.md is kept");
        println!("          {} blob stored in the cache", trial.blobs);
        Ok(())
    }

    /// Tampered: one byte flipped, same length. The size check passes; the digest check does
    /// not, and the bytes are not kept.
    async fn tampered(&self) -> Result<(), BoxError> {
        let mut tampered = self.md.clone();
        let i = tampered
            .iter()
            .rposition(u8::is_ascii_alphabetic)
            .ok_or("SKILL.md has a letter")?;
        tampered[i] ^= 0x20; // the letter's case: still text, still the same length
        assert_eq!(tampered.len(), self.md.len());
        let trial = load_through(self.source(Some(tampered), None), self.entry.uri()).await?;
        let err = trial
            .loaded
            .err()
            .ok_or("a tampered SKILL.md must not load")?;
        assert!(matches!(
            &err,
            Error::Verify(VerifyError {
                mismatch: Mismatch::Digest { .. },
                ..
            })
        ));
        assert_eq!(trial.blobs, 0, "bytes that fail are never stored");
        println!("tampered  refused: {err}");
        println!(
            "          nothing stored ({} blobs in the cache)",
            trial.blobs
        );
        Ok(())
    }

    /// Drifted frontmatter under an honest digest: the listed digest and size are those of the
    /// served bytes, but the entry's frontmatter is still the old one (R-V6).
    async fn drifted(&self) -> Result<(), BoxError> {
        let drifted = drift_description(std::str::from_utf8(&self.md)?, self.entry.description())
            .ok_or("SKILL.md has no top-level `description:` line to edit")?
            .into_bytes();
        let source = self.source(Some(drifted.clone()), Some(drifted));
        let trial = load_through(source, self.entry.uri()).await?;
        assert_eq!(trial.entry.frontmatter(), self.entry.frontmatter());
        assert_ne!(trial.entry.binding(), self.entry.binding());
        let err = trial
            .loaded
            .err()
            .ok_or("a drifted SKILL.md must not load")?;
        assert!(matches!(
            &err,
            Error::Verify(VerifyError {
                mismatch: Mismatch::Frontmatter { diffs },
                ..
            }) if diffs.iter().any(|d| d.key == "description")
        ));
        assert_eq!(trial.blobs, 0, "a SKILL.md that fails R-V6 is never stored");
        println!("drifted   refused: {err}");
        println!(
            "          nothing stored ({} blobs in the cache)",
            trial.blobs
        );
        Ok(())
    }
}

/// `md` with its frontmatter's `description:` (the line and the value's indented continuation
/// lines) replaced by `description: "<description> (edited)"`: a JSON string is a valid YAML
/// double-quoted scalar, so the frontmatter still parses, with a different description. `None`
/// when there is no top-level `description:` line.
fn drift_description(md: &str, description: &str) -> Option<String> {
    let value = serde_json::to_string(&format!("{description} (edited)")).ok()?;
    let mut out = String::with_capacity(md.len() + value.len());
    let (mut replaced, mut in_value) = (false, false);
    // The first line is the opening `---`; the first top-level `description:` after it is the
    // frontmatter's (a skill's frontmatter always has one).
    for (n, line) in md.split_inclusive('\n').enumerate() {
        if in_value && (line.starts_with([' ', '\t']) || line.trim().is_empty()) {
            continue;
        }
        in_value = false;
        if !replaced && n > 0 && line.starts_with("description:") {
            let eol = if line.ends_with("\r\n") { "\r\n" } else { "\n" };
            out.push_str("description: ");
            out.push_str(&value);
            out.push_str(eol);
            (replaced, in_value) = (true, true);
            continue;
        }
        out.push_str(line);
    }
    replaced.then_some(out)
}

/// What one load through a fresh cache gave.
struct Trial {
    /// The entry as `skills/get` answered it, validated.
    entry: SkillEntry,
    /// What `load` returned.
    loaded: Result<LoadedSkill, Error>,
    /// How many blobs the cache holds afterwards.
    blobs: usize,
    /// The cache root, removed when the trial is dropped.
    _root: tempfile::TempDir,
}

/// Asks `source` for the entry of `uri` and loads it, through a cache with its own temporary
/// root.
async fn load_through(source: Altered, uri: &SkillUri) -> Result<Trial, BoxError> {
    let root = tempfile::tempdir()?;
    let cache = SkillCache::builder()
        // The root and the host key both inside the temporary folder: nothing under `~`.
        .root(root.path().join("cache"))
        .key_file(root.path().join("host.key"))
        // This example checks bytes, not approvals: a host keeps the default (`Required`) and
        // loads only what its user approved (`SkillCache::approve`).
        .approval(ApprovalPolicy::NotRequired)
        .open()?;
    let origin = Origin::new("check-skill")?;
    cache.connect(origin.clone(), Arc::new(source));
    let entry = cache.entry(&origin, uri).await?.entry;
    let loaded = cache.load(&origin, &entry).await;
    let blobs = cache.inventory().await?.blobs;
    // The store seals its folders read-only, which a normal user's `TempDir` cannot remove:
    // purging the origin gives them back before the root is dropped.
    cache.purge(&origin).await?;
    Ok(Trial {
        entry,
        loaded,
        blobs,
        _root: root,
    })
}

/// A skills server over a folder that can change what it says about one `SKILL.md`.
struct Altered {
    server: SkillServer,
    /// The URI of the `SKILL.md` whose answers change.
    skill_md: String,
    /// What `resources/read` of it answers instead of the file's bytes.
    served: Option<Vec<u8>>,
    /// The bytes whose digest and size `skills/get` lists for it instead of the file's.
    listed: Option<Vec<u8>>,
}

impl SkillSource for Altered {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
        self.server.list_skills(cursor)
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            // {"skill": {"uri", "frontmatter", "resources": [{"uri", "digest", "size"}]}, hints…}
            let mut result = self.server.get_skill(uri).await?;
            if let (Some(bytes), Some(Value::Array(files))) =
                (&self.listed, result.pointer_mut("/skill/resources"))
            {
                for f in files
                    .iter_mut()
                    .filter(|f| f["uri"].as_str() == Some(self.skill_md.as_str()))
                {
                    f["digest"] = json!(Digest::of(bytes).to_string());
                    f["size"] = json!(bytes.len());
                }
            }
            Ok(result)
        })
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(async move {
            // {"contents": [{"uri", "mimeType", "text" or "blob"}], hints…}
            let mut result = self.server.read_resource(uri).await?;
            if let (Some(bytes), true, Some(obj)) =
                (&self.served, uri == self.skill_md, result.as_object_mut())
            {
                // As a base64 `blob`, which carries any bytes (text would need valid UTF-8).
                let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                obj.insert(
                    "contents".to_owned(),
                    json!([{"uri": uri, "mimeType": "text/markdown", "blob": blob}]),
                );
            }
            Ok(result)
        })
    }
}
