//! The fleet simulation of issue 14: N host processes, each with its own cold root, load every
//! skill of a corpus at once from one counting MCP server, without and then with one shared L2.
//!
//! ```text
//! fleet CORPUS_DIR S3_URL [HOSTS]     the coordinator (prints a markdown table)
//! fleet --host MCP_URL ROOT [S3_URL]  one host (prints one JSON line)
//! ```
//!
//! `S3_URL` is `s3://bucket/prefix`; the hosts read the standard `AWS_*` environment (see
//! `scripts/fleet-sim.sh`, which starts moto and sets it). Each round uses its own prefix, so
//! every round starts with an empty tier. The server is an in-process Streamable HTTP server over
//! the corpus (`SkillServer`, public entries) that counts the `resources/read` requests it answers.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value, json};
use skillcache::server::SkillServer;
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Counter, L2, Origin, SkillCache};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--host") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return rt.block_on(host(&args[1], Path::new(&args[2]), args.get(3)));
    }
    let usage = "usage: fleet CORPUS_DIR s3://bucket/prefix [HOSTS]";
    let corpus = PathBuf::from(args.first().ok_or(usage)?);
    let s3 = args.get(1).ok_or(usage)?.trim_end_matches('/').to_owned();
    let hosts: usize = args.get(2).map_or(Ok(6), |n| n.parse())?;

    let reads = Arc::new(AtomicU64::new(0));
    let url = serve_http(SkillServer::new(&corpus), Arc::clone(&reads))?;
    let run_id = std::process::id();
    let mut rows = Vec::new();
    for with_l2 in [false, true] {
        reads.store(0, Ordering::SeqCst);
        let roots = tempfile::tempdir()?;
        let tier = with_l2.then(|| format!("{s3}/run-{run_id}"));
        let started = Instant::now();
        let children: Vec<_> = (0..hosts)
            .map(|i| {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("--host")
                    .arg(&url)
                    .arg(roots.path().join(format!("host-{i}")));
                if let Some(t) = &tier {
                    c.arg(t);
                }
                c.stdout(Stdio::piped()).spawn()
            })
            .collect::<Result<_, _>>()?;
        let mut reports = Vec::new();
        for child in children {
            let out = child.wait_with_output()?;
            if !out.status.success() {
                return Err(format!("a host failed: {}", out.status).into());
            }
            reports.push(serde_json::from_slice::<Value>(&out.stdout)?);
        }
        let wall = started.elapsed();
        let distinct: BTreeSet<&str> = reports
            .iter()
            .flat_map(|r| r["digests"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let sum = |k: &str| {
            reports
                .iter()
                .map(|r| r[k].as_u64().unwrap_or(0))
                .sum::<u64>()
        };
        let server_reads = reads.load(Ordering::SeqCst);
        rows.push(format!(
            "| {} | {hosts} | {} | {} | {server_reads} | {:.2}× | {} | {} | {} | {:.2} s |",
            if with_l2 { "with L2" } else { "without L2" },
            sum("files"),
            distinct.len(),
            ratio(server_reads, distinct.len()),
            sum("l2_hits"),
            sum("l2_puts"),
            sum("failed_skills"),
            wall.as_secs_f64(),
        ));
    }
    println!(
        "| run | hosts | files loaded | distinct public blobs | server resources/read | ÷ distinct | L2 hits | L2 puts | skills failed | wall time |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

/// `reads / distinct` for the table.
#[allow(clippy::cast_precision_loss)] // counts of files, far below 2^52
fn ratio(reads: u64, distinct: usize) -> f64 {
    reads as f64 / distinct.max(1) as f64
}

/// One host: a cold root, every skill of the server listed, loaded and read whole.
async fn host(
    url: &str,
    root: &Path,
    tier: Option<&String>,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(root)?;
    let mut builder = SkillCache::builder()
        .root(root.join("cache"))
        .key_file(root.join("host.key"))
        .approval(ApprovalPolicy::NotRequired);
    if let Some(t) = tier {
        builder = builder.l2(L2::from_url(t)?);
    }
    let cache = builder.open()?;
    let origin = Origin::new("corpus")?;
    cache.connect(origin.clone(), Arc::new(McpSource::http(url)));
    let (mut files, mut failed) = (0u64, 0u64);
    let mut digests = BTreeSet::new();
    for listed in cache.list(&origin).await? {
        let Ok(info) = listed else {
            failed += 1;
            continue;
        };
        match async {
            let skill = cache.load(&origin, &info.entry).await?;
            skill.read_all().await
        }
        .await
        {
            Ok(read) => {
                for f in read {
                    files += 1;
                    if let skillcache::Verification::Verified(d) = f.verification() {
                        digests.insert(d.to_string());
                    }
                }
            }
            Err(e) => {
                eprintln!("fleet host: {}: {e}", info.entry.uri());
                failed += 1;
            }
        }
    }
    let s = cache.stats();
    println!(
        "{}",
        json!({
            "files": files, "failed_skills": failed, "digests": digests,
            "l2_hits": s[Counter::L2Hits], "l2_misses": s[Counter::L2Misses],
            "l2_puts": s[Counter::L2Puts], "l2_rejected": s[Counter::L2Rejected],
            "l2_unavailable": s[Counter::L2Unavailable],
        })
    );
    // The store's folders are read-only: purging gives them back, so that the run's temporary
    // folder can be removed by a normal user too.
    cache.purge(&origin).await?;
    Ok(())
}

/// A Streamable HTTP MCP server on a loopback port (one thread per connection, one JSON body
/// per POST), counting every `resources/read` it answers.
fn serve_http(server: SkillServer, reads: Arc<AtomicU64>) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (server, reads) = (server.clone(), Arc::clone(&reads));
            std::thread::spawn(move || {
                // A host that hangs up is not the coordinator's problem.
                let _ = connection(&server, &reads, stream);
            });
        }
    });
    Ok(format!("http://{addr}/mcp"))
}

fn connection(server: &SkillServer, reads: &AtomicU64, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let post = request_line.starts_with("POST ");
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if !post {
            out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        }
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            out.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        if message["method"] == "resources/read" {
            reads.fetch_add(1, Ordering::SeqCst);
        }
        let Some(reply) = server.handle(&message) else {
            out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        let reply = serde_json::to_vec(&reply)?;
        write!(
            out,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nMcp-Session-Id: fleet\r\n\r\n",
            reply.len()
        )?;
        out.write_all(&reply)?;
        out.flush()?;
    }
}
