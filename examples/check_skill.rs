//! Builds the entry a server would publish for a skill folder, validates it, and checks the
//! folder's `SKILL.md` against it — then shows what a tampered copy looks like to the checks.
//!
//! `cargo run --release --example check_skill [SKILL_FOLDER]` (default: the bundled sample).

use std::path::PathBuf;

use skillcache::entry::Validation;
use skillcache::frontmatter;
use skillcache::local::inspect;
use skillcache::{Digest, SkillEntry};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/skills/release-notes"),
        PathBuf::from,
    );
    let name = dir
        .file_name()
        .ok_or("the folder has no name")?
        .to_string_lossy()
        .into_owned();
    let root = format!("skill://{name}");
    let skill = match inspect(&dir, &root, &Validation::default()) {
        Ok(s) => s,
        Err(problems) => {
            for p in &problems {
                eprintln!("not a valid skill: {p}");
            }
            std::process::exit(4);
        }
    };
    // The entry, as a server would send it, validated from its wire form like any server's.
    let wire = skill.to_json();
    let entry = SkillEntry::from_json(&wire, &Validation::default())?;
    let manifest = entry.manifest().ok_or("a folder always has a manifest")?;
    println!("entry     {}", entry.uri());
    println!(
        "files     {} ({} bytes)",
        manifest.files().len(),
        manifest.total_bytes()
    );
    println!("binding   {}", manifest.binding());
    for f in manifest.files() {
        println!("  {}  {:>7}  {}", f.digest(), f.size(), f.uri());
    }

    let md_path = dir.join("SKILL.md");
    let md = std::fs::read(&md_path)?;
    let listed = entry
        .file(entry.uri().file())
        .ok_or("SKILL.md is always listed")?;
    let ok_bytes = Digest::of(&md) == listed.digest() && md.len() as u64 == listed.size();
    let diffs = frontmatter::compare(entry.frontmatter(), &frontmatter::parse(&md)?);
    println!(
        "SKILL.md  size+digest {}, frontmatter {}",
        verdict(ok_bytes),
        verdict(diffs.is_empty())
    );

    // One byte changed at the same length: the size check passes, the digest check does not.
    let mut tampered = md.clone();
    let i = tampered.len() - 2;
    tampered[i] ^= 0x20;
    println!(
        "tampered  same size {}, digest {}",
        verdict(tampered.len() == md.len()),
        verdict(Digest::of(&tampered) == listed.digest())
    );
    // An honest digest for a drifted frontmatter: caught by the field-by-field check (R-V6).
    let drifted = String::from_utf8(md)?.replacen("description:", "description: (edited)", 1);
    let diffs = frontmatter::compare(
        entry.frontmatter(),
        &frontmatter::parse(drifted.as_bytes())?,
    );
    println!(
        "drifted   frontmatter differs in: {}",
        diffs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISMATCH" }
}
