//! The skillcache side of `scripts/ts-compare.sh`: over Streamable HTTP, list every skill of a
//! server, then load each with every file (`load_all`: verified; on a cold root each skill is
//! fetched a few files at a time and published as one batch), two skills at a time. The whole process
//! is what the script measures; this prints `skills=N files=M bytes=B ms=T`.
//!
//! With `--bare` it is the floor of that sweep: the same requests (`skills/list`, then every
//! listed file of each skill by `resources/read`, the same number of skills at once and of reads
//! in flight per skill as the sweep keeps) sent through the same transport, nothing validated,
//! verified or kept.
//!
//! ```text
//! sweep URL ROOT
//! sweep --bare URL
//! ```

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use skillcache::source::{McpSource, SkillSource};
use skillcache::{ApprovalPolicy, Origin, SkillCache};

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<skillcache::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, url] = args.as_slice()
        && flag == "--bare"
    {
        return bare(url).await;
    }
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
    // Entries our validation refuses are left out, as the TS client's `skipInvalid` does.
    let mut listed = cache
        .list(&origin)
        .await?
        .into_iter()
        .filter_map(Result::ok);
    // A few skills at a time: one skill's batch is published (its syncs) while the next is
    // fetched, so the server is kept busy as it is by the floor's same shape.
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < SKILLS_IN_FLIGHT {
            let Some(info) = listed.next() else { break };
            let (cache, origin) = (cache.clone(), origin.clone());
            running.spawn(async move {
                let (_skill, all) = cache.load_all(&origin, &info.entry).await?;
                let mut sum = (0, 0);
                for f in all {
                    assert!(f.verification() != skillcache::Verification::Unverified);
                    sum = (sum.0 + 1, sum.1 + f.bytes().len());
                }
                Ok::<_, skillcache::Error>(sum)
            });
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let (n, b) = done.expect("a load task")?;
        (files, bytes, skills) = (files + n, bytes + b, skills + 1);
    }
    println!(
        "skills={skills} files={files} bytes={bytes} ms={:.1}",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Reads in flight per skill: what a load keeps (`FETCHES_IN_FLIGHT` in the loading pipeline).
const IN_FLIGHT: usize = 8;

/// Skills swept at once, by both sides.
const SKILLS_IN_FLIGHT: usize = 2;

/// The floor: the sweep's requests, bare.
async fn bare(url: &str) -> Result<(), Box<skillcache::Error>> {
    let start = Instant::now();
    let source = Arc::new(McpSource::http(url));
    source.ready().await?;
    let mut skills: Vec<Vec<String>> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = source.list_skills(cursor.as_deref()).await?;
        for skill in page["skills"].as_array().into_iter().flatten() {
            let uris = skill["resources"].as_array().into_iter().flatten();
            skills.push(
                uris.filter_map(|r| r["uri"].as_str().map(str::to_owned))
                    .collect(),
            );
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let (mut files, mut bytes) = (0, 0);
    let mut next = skills.iter().cloned();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < SKILLS_IN_FLIGHT {
            let Some(uris) = next.next() else { break };
            running.spawn(read_all(Arc::clone(&source), uris));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let (n, b) = done.expect("a skill task")?;
        (files, bytes) = (files + n, bytes + b);
    }
    println!(
        "skills={} files={files} bytes={bytes} ms={:.1}",
        skills.len(),
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// One skill's files by `resources/read`, `IN_FLIGHT` at a time: how many, and their bytes as
/// received (base64 text counted as sent).
async fn read_all(
    source: Arc<McpSource>,
    uris: Vec<String>,
) -> Result<(usize, usize), Box<skillcache::Error>> {
    let (mut files, mut bytes) = (0, 0);
    let mut running = tokio::task::JoinSet::new();
    let mut next = uris.into_iter();
    loop {
        while running.len() < IN_FLIGHT {
            let Some(uri) = next.next() else { break };
            let source = Arc::clone(&source);
            running.spawn(async move { source.read_resource(&uri).await });
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let result: Value = done.expect("a read task")?;
        files += 1;
        bytes += result["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                c["text"]
                    .as_str()
                    .or(c["blob"].as_str())
                    .map_or(0, str::len)
            })
            .sum::<usize>();
    }
    Ok((files, bytes))
}
