//! The skillcache side of `scripts/rmcp-race.sh` (issue 41): a host that sweeps a server over
//! stdio — lists every skill and loads each with every file (`load_all`: fetched, verified,
//! stored) — `SWEEPS` times in one process. The first sweep of an empty `ROOT` is cold; the
//! later ones are what a host's repeated sweep costs (verified hits).
//!
//! ```text
//! race_sweep ROOT SWEEPS SERVER [ARGS...]
//! ```
//! Prints one line a sweep: `sweep=N skills=S files=F bytes=B ms=T` (the first sweep's time
//! includes starting the server and initializing, as `rmcp-peer`'s does).

use std::sync::Arc;
use std::time::Instant;

use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Origin, SkillCache};

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<skillcache::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(root), Some(sweeps), Some(server)) = (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u32>().ok()),
        args.get(2),
    ) else {
        eprintln!("usage: race_sweep ROOT SWEEPS SERVER [ARGS...]");
        std::process::exit(2);
    };
    let start = Instant::now();
    // rmcp alone has no approval step: both sides verify every byte, nothing more.
    let cache = SkillCache::builder()
        .approval(ApprovalPolicy::NotRequired)
        .root(root)
        .key_file(format!("{root}.key"))
        .open()?;
    let origin = Origin::new("race").expect("label");
    let mut command = tokio::process::Command::new(server);
    command.args(&args[3..]).stderr(std::process::Stdio::null());
    cache.connect(origin.clone(), Arc::new(McpSource::stdio(command)));
    let mut clock = start;
    for n in 1..=sweeps {
        let (mut skills, mut files, mut bytes) = (0, 0, 0);
        for listed in cache.list(&origin).await? {
            // An entry our rules refuse is not loaded (the rmcp side loads what rmcp accepts).
            let Ok(info) = listed else { continue };
            let (_, read) = cache.load_all(&origin, &info.entry).await?;
            skills += 1;
            files += read.len();
            bytes += read.iter().map(|f| f.bytes().len()).sum::<usize>();
        }
        let ms = clock.elapsed().as_secs_f64() * 1e3;
        println!("sweep={n} skills={skills} files={files} bytes={bytes} ms={ms:.2}");
        clock = Instant::now();
    }
    Ok(())
}
