//! A host against a real MCP server over stdio: it starts `skillcache serve` on a folder of
//! skills as a child process (its stderr into a log file, not the user's terminal), lists the
//! server's skills (reporting each entry it refuses), approves, loads and reads them, and prints
//! what would enter the model's context. The cache root and the host key live in a temporary
//! folder that the example removes, read-only store folders included.
//!
//! `cargo build && cargo run --example host_stdio [SERVER [SKILLS]]`: SERVER defaults to the
//! `skillcache` binary beside this example's folder (`target/debug/skillcache`), SKILLS to the
//! bundled `samples/skills`. The README shows this file's code, and `tests/host_example.rs`
//! checks that it is the same code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use skillcache::source::McpSource;
use skillcache::{Origin, SkillCache};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Err(e) = run().await else {
        return std::process::ExitCode::SUCCESS;
    };
    // What went wrong, then why: `main() -> Result` would print a Debug dump instead.
    eprintln!("error: {e}");
    for cause in std::iter::successors(e.source(), |c| c.source()) {
        eprintln!("  because: {cause}");
    }
    std::process::ExitCode::FAILURE
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (server, skills) = server_and_skills()?;
    let tmp = tempfile::tempdir()?; // the cache root and the host key: nothing under ~
    // The source pipes stdin and stdout (the MCP stream) and kills the child when dropped;
    // stderr is the host's to route: a log file here, not the user's terminal.
    let mut command = tokio::process::Command::new(server);
    command
        .arg("serve")
        .arg(skills)
        .args(["--dynamic", "live-status"]);
    command.stderr(std::fs::File::create(tmp.path().join("server.log"))?);
    let cache = SkillCache::builder()
        .root(tmp.path().join("cache"))
        .key_file(tmp.path().join("host.key"))
        .open()?;
    let origin = Origin::new("docs")?;
    cache.connect(origin.clone(), Arc::new(McpSource::stdio(command)));

    // The listing fails whole only when the server does; each entry it refuses fails alone.
    for listed in cache.list(&origin).await? {
        let entry = match listed {
            Ok(info) => info.entry,
            Err(refused) => {
                eprintln!("{origin}: skipped an entry: {refused}");
                continue;
            }
        };
        // A real host asks its user first, showing `display_safe(entry.description())`. A
        // dynamic skill has no digests: it cannot be approved, and `load` declines it.
        if !entry.is_dynamic() && !cache.is_approved(&origin, &entry).await? {
            cache.approve(&origin, &entry, None).await?;
        }
        let skill = match cache.load(&origin, &entry).await {
            Ok(skill) => skill,
            Err(declined) => {
                eprintln!("not loaded: {declined}"); // names the skill and its origin
                continue;
            }
        };
        // What enters the model's context: the verified bytes, framed with origin and URI.
        println!("{}", skill.skill_md().framed());
        for listed in skill.files() {
            let file = skill.read(listed.uri().as_str()).await?; // as the model asks for it
            println!("read {} ({} bytes)", file.uri(), file.bytes().len());
        }
    }
    // The store's folders are read-only: purging gives them back before `tmp` is removed.
    cache.purge(&origin).await?;
    Ok(())
}

/// The server binary and the folder it serves: the arguments, or `skillcache` beside this
/// example's folder and the bundled samples.
fn server_and_skills() -> std::io::Result<(PathBuf, PathBuf)> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let server = match args.next() {
        Some(server) => server,
        None => std::env::current_exe()?
            .parent()
            .and_then(Path::parent)
            .map(|target| target.join("skillcache"))
            .ok_or_else(|| std::io::Error::other("no folder above this example's"))?,
    };
    let skills = args
        .next()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills"));
    Ok((server, skills))
}
