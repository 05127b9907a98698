//! The skillcache side of `scripts/ts-compare.sh`: over Streamable HTTP, list every skill of a
//! server, then load each with every file (`load_all`: verified; on a cold root each skill is
//! fetched a few files at a time and published as one batch). The whole process
//! is what the script measures; this prints `skills=N files=M bytes=B ms=T`.
//!
//! ```text
//! sweep URL ROOT
//! ```

use std::sync::Arc;
use std::time::Instant;

use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Origin, SkillCache};

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<skillcache::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(root)) = (args.first(), args.get(1)) else {
        eprintln!("usage: sweep URL ROOT");
        std::process::exit(2);
    };
    let start = Instant::now();
    // The TS client has no approval step either: both sides verify every byte, nothing more.
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(root)
        // Beside the root (the key is kept outside it), in the folder the caller cleans up.
        .key_file(format!("{root}.key"))
        .open()?;
    let origin = Origin::new("ts-server").expect("a valid label");
    cache.connect(origin.clone(), Arc::new(McpSource::http(url)));
    let (mut skills, mut files, mut bytes) = (0, 0, 0);
    for listed in cache.list(&origin).await? {
        // Entries our validation refuses are left out, as the TS client's `skipInvalid` does.
        let Ok(info) = listed else { continue };
        let (_skill, all) = cache.load_all(&origin, &info.entry).await?;
        for f in all {
            assert!(f.verification() != skillcache::Verification::Unverified);
            files += 1;
            bytes += f.bytes().len();
        }
        skills += 1;
    }
    println!(
        "skills={skills} files={files} bytes={bytes} ms={:.1}",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
