//! The client driver for the official MCP conformance harness's SEP-2640 client scenarios.
//!
//! The harness starts a hostile Streamable HTTP server, appends its URL to this command line and
//! sets `MCP_CONFORMANCE_SCENARIO`. The driver behaves like a host on skillcache's loading path:
//! list the skills (which must fetch nothing), then — except in the no-prefetch scenario, which
//! ends at listing — load each skill and, only if its `SKILL.md` verified, read every file it
//! lists. A skill that fails verification is refused and nothing more is read from it.
//!
//! `cargo run --example conformance_client -- URL`

use std::process::ExitCode;
use std::sync::Arc;

use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Origin, SkillCache};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let root = std::env::temp_dir().join(format!(
        "skillcache-conformance-{}-{nanos}",
        std::process::id()
    ));
    let code = match drive(&url, &scenario, &root).await {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("conformance_client: {e}");
            ExitCode::from(1)
        }
    };
    if let Ok(cache) = SkillCache::builder().root(&root).open()
        && let Ok(origin) = Origin::new("conformance")
    {
        let _ = cache.core().purge(&origin);
    }
    let _ = std::fs::remove_dir_all(&root);
    code
}

/// Returns how many skills were refused.
async fn drive(
    url: &str,
    scenario: &str,
    root: &std::path::Path,
) -> Result<usize, skillcache::Error> {
    // A conformance driver has no user to ask: it checks verification, not activation, so it
    // opts out of the approval gate explicitly (R-P1).
    let cache = SkillCache::builder()
        .root(root)
        .approval(ApprovalPolicy::NotRequired)
        .open()?;
    let origin = Origin::new("conformance")?;
    cache.connect(origin.clone(), Arc::new(McpSource::http(url)));
    let listed = cache.list(&origin).await?;
    println!("{scenario}: listed {} skill(s)", listed.len());
    if scenario.ends_with("no-prefetch") {
        return Ok(0);
    }
    let mut refused = 0;
    for info in listed {
        let entry = match info {
            Ok(info) => info.entry,
            Err(e) => {
                println!("refused an entry: {e}");
                refused += 1;
                continue;
            }
        };
        match cache.load(&origin, &entry).await {
            Ok(skill) => {
                for file in skill.files() {
                    let f = skill.read(file.uri().as_str()).await?;
                    println!("read {} ({} bytes, verified)", f.uri(), f.bytes().len());
                }
            }
            Err(e) => {
                println!("refused {}: {e}", entry.uri());
                refused += 1;
            }
        }
    }
    Ok(refused)
}
