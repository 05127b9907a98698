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
    // The cache root and the host key in one folder of our own, removed at the end.
    let work = std::env::temp_dir().join(format!(
        "skillcache-conformance-{}-{nanos}",
        std::process::id()
    ));
    // A conformance driver has no user to ask: it checks verification, not activation, so it
    // opts out of the approval gate explicitly (R-P1).
    let cache = match SkillCache::builder()
        .root(work.join("cache"))
        .key_file(work.join("host.key"))
        .approval(ApprovalPolicy::NotRequired)
        .open()
    {
        Ok(cache) => cache,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match drive(&cache, &url, &scenario).await {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("conformance_client: {e}");
            ExitCode::from(1)
        }
    };
    // The store's folders are read-only: purging gives them back before the folder goes.
    if let Ok(origin) = Origin::new("conformance") {
        let _ = cache.purge(&origin).await;
    }
    drop(cache);
    let _ = std::fs::remove_dir_all(&work);
    code
}

/// Returns how many skills were refused.
async fn drive(cache: &SkillCache, url: &str, scenario: &str) -> Result<usize, skillcache::Error> {
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
