//! The fleet simulation (issue 14, and issue 30's G2 at a hundred hosts): N host processes,
//! each with its own cold root, start at once against one long-lived MCP server and one shared
//! L2, and load every skill of two origins — `corpus`, served as `cacheScope: public`, and
//! `private`, served as `cacheScope: private`.
//!
//! ```text
//! fleet [OPTIONS] s3://bucket/prefix      the coordinator (prints markdown tables)
//!   --hosts N          hosts started at once (default 6)
//!   --corpus DIR       the public skills (default: a synthetic corpus, see --skills)
//!   --skills N         synthetic public skills (default 20) …
//!   --files M          … of M files each besides SKILL.md (default 5)
//!   --baseline         also run the whole fleet without L2 (every host reads every blob)
//!   --new-hosts K      new-host cold starts measured each way after the fleet (default 3)
//!   --server-delay MS  a pause before each answer of the server: a remote server's round trip
//!                      and work (default 0: the server answers at once, on loopback)
//!   --processes        each host a process of its own (default: every host a `SkillCache`
//!                      on a root of its own, all in this process on one runtime)
//!   --l2-timeout MS    `L2::timeout` (default 2000, the library's default)
//!   --claim-wait MS    `L2::claim_wait` (default 5000, the library's default)
//! fleet --host MCP_BASE ROOT [S3_URL TIMEOUT_MS CLAIM_WAIT_MS]   one host process (one JSON line)
//! ```
//!
//! `S3_URL` is `s3://bucket/prefix`; the hosts read the standard `AWS_*` environment (see
//! `scripts/fleet-sim.sh`, which starts moto and sets it). Each run uses its own prefix, so it
//! starts with an empty tier. The server is an in-process Streamable HTTP server (`SkillServer`)
//! that counts the `resources/read` requests it answers; the private origin is the same server
//! over a small synthetic corpus with its `cacheScope` hints rewritten to `private`.
//!
//! What it measures: how many times the server read each distinct public blob while the fleet
//! started; a new host's cold start with the tier warm against the same host with no tier (the
//! long-lived server serves it, not a server started per load); and, by listing the bucket, that
//! no private file reached it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use object_store::{ObjectStore as _, ObjectStoreExt as _};
use serde_json::{Value, json};
use skillcache::server::SkillServer;
use skillcache::source::McpSource;
use skillcache::{ApprovalPolicy, Counter, Digest, L2, Origin, SkillCache};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// Private synthetic skills, and files in each besides `SKILL.md`.
const PRIVATE_SKILLS: usize = 3;
const PRIVATE_FILES: usize = 3;

struct Options {
    s3: String,
    hosts: usize,
    corpus: Option<PathBuf>,
    skills: usize,
    files: usize,
    baseline: bool,
    new_hosts: usize,
    server_delay: Duration,
    processes: bool,
    l2_timeout: Duration,
    claim_wait: Duration,
}

/// The shared tier a host is given: the URL and the two settings the simulation varies.
#[derive(Clone)]
struct TierSpec {
    url: String,
    timeout: Duration,
    claim_wait: Duration,
}

fn options(args: &[String]) -> Result<Options> {
    let usage = "usage: fleet [--hosts N] [--corpus DIR | --skills N --files M] [--baseline] [--new-hosts K] [--server-delay MS] s3://bucket/prefix";
    let mut o = Options {
        s3: String::new(),
        hosts: 6,
        corpus: None,
        skills: 20,
        files: 5,
        baseline: false,
        new_hosts: 3,
        server_delay: Duration::ZERO,
        processes: false,
        l2_timeout: L2::DEFAULT_TIMEOUT,
        claim_wait: L2::DEFAULT_CLAIM_WAIT,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(usage);
        match a.as_str() {
            "--hosts" => o.hosts = value()?.parse()?,
            "--corpus" => o.corpus = Some(PathBuf::from(value()?)),
            "--skills" => o.skills = value()?.parse()?,
            "--files" => o.files = value()?.parse()?,
            "--new-hosts" => o.new_hosts = value()?.parse()?,
            "--server-delay" => o.server_delay = Duration::from_millis(value()?.parse()?),
            "--l2-timeout" => o.l2_timeout = Duration::from_millis(value()?.parse()?),
            "--claim-wait" => o.claim_wait = Duration::from_millis(value()?.parse()?),
            "--processes" => o.processes = true,
            "--baseline" => o.baseline = true,
            s if s.starts_with("s3://") => s.trim_end_matches('/').clone_into(&mut o.s3),
            _ => return Err(usage.into()),
        }
    }
    if o.s3.is_empty() {
        return Err(usage.into());
    }
    Ok(o)
}

fn main() -> Result<()> {
    // Warnings (a tier left alone after a failure, with its error) go to stderr.
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--host") {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let tier = match args.get(3..6) {
            Some([url, timeout, claim]) => Some(TierSpec {
                url: url.clone(),
                timeout: Duration::from_millis(timeout.parse()?),
                claim_wait: Duration::from_millis(claim.parse()?),
            }),
            _ => None,
        };
        let report = rt.block_on(host(args[1].clone(), PathBuf::from(&args[2]), tier))?;
        println!("{report}");
        return Ok(());
    }
    let o = options(&args)?;
    let work = tempfile::tempdir()?;
    let corpus = match &o.corpus {
        Some(dir) => dir.clone(),
        None => synthetic(&work.path().join("public"), "skill", o.skills, o.files)?,
    };
    let private = synthetic(
        &work.path().join("private"),
        "secret",
        PRIVATE_SKILLS,
        PRIVATE_FILES,
    )?;
    let reads = Arc::new(Reads::default());
    let base = serve_http(
        SkillServer::new(&corpus),
        SkillServer::new(&private),
        Arc::clone(&reads),
        o.server_delay,
    )?;
    let run = format!("{}/run-{}", o.s3, std::process::id());
    let rt = tokio::runtime::Runtime::new()?;

    // 1. The fleet: every host cold, all at once.
    let mut rows = Vec::new();
    let rounds: &[bool] = if o.baseline { &[false, true] } else { &[true] };
    let spec = |url: String| TierSpec {
        url,
        timeout: o.l2_timeout,
        claim_wait: o.claim_wait,
    };
    let hosts = Hosts {
        base: base.clone(),
        processes: o.processes,
    };
    for &with_l2 in rounds {
        let tier = with_l2.then(|| spec(format!("{run}/fleet")));
        rows.push(fleet_round(&hosts, &reads, o.hosts, tier.as_ref())?);
    }
    println!(
        "| run | hosts | files loaded | distinct public blobs | server reads of public blobs | ÷ distinct | private reads | L2 hits | L2 misses | L2 puts | L2 unavailable | L2 retries | skills failed | wall time |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!("{r}");
    }

    // 2. A new host's cold start, from L2 and from the server alone.
    new_host_cold_starts(&hosts, &spec(format!("{run}/fleet")), o.new_hosts)?;

    // 3. Privacy: list the whole run's prefix. No key under the private origin, and no object
    //    holding a private file's bytes under any key.
    let private_digests = digests_under(&private)?;
    let (keys, claims, leaked) = rt.block_on(bucket_check(&run, &private_digests))?;
    println!();
    println!(
        "objects under the run's prefix: {keys} (claim markers left: {claims}); private files: {}; private files found in L2: {leaked}",
        private_digests.len()
    );
    if leaked > 0 {
        return Err("a private file reached L2".into());
    }
    Ok(())
}

/// A new host's cold start: the tier warm (the fleet filled it) against no tier (the
/// long-lived server serves everything), `k` times each, alternated so that drift on a shared
/// machine hits both alike; prints each run and the medians.
fn new_host_cold_starts(hosts: &Hosts, warm_tier: &TierSpec, k: usize) -> Result<()> {
    let roots = tempfile::tempdir()?;
    let (mut from_l2, mut from_server) = (Vec::new(), Vec::new());
    let (mut l2_hits, mut public_files) = (0, 0);
    for i in 0..k {
        let warm = hosts.run(&roots.path().join(format!("l2-{i}")), 1, Some(warm_tier))?;
        let cold = hosts.run(&roots.path().join(format!("srv-{i}")), 1, None)?;
        from_l2.push(warm[0]["public_ms"].as_f64().unwrap_or(f64::NAN));
        from_server.push(cold[0]["public_ms"].as_f64().unwrap_or(f64::NAN));
        l2_hits = warm[0]["l2_hits"].as_u64().unwrap_or(0);
        public_files = warm[0]["public_files"].as_u64().unwrap_or(0);
    }
    let (l2_ms, server_ms) = (median(&mut from_l2), median(&mut from_server));
    println!();
    println!("| new host, cold, every public skill | median of {k} | each run |");
    println!("|---|---:|---|");
    println!(
        "| from the long-lived server (no L2) | {server_ms:.0} ms | {} |",
        join_ms(&from_server)
    );
    println!("| from L2 (warm) | {l2_ms:.0} ms | {} |", join_ms(&from_l2));
    println!("| ratio | {:.2}× | |", l2_ms / server_ms);
    println!(
        "\nthe last new host with L2 read {l2_hits} of its {public_files} public files from L2 (a file whose bytes it already held is a local hit)"
    );

    Ok(())
}

/// The server's `resources/read` counts: public and private endpoints apart.
#[derive(Default)]
struct Reads {
    public: AtomicU64,
    private: AtomicU64,
}

/// One round: `hosts` processes at once; one table row.
fn fleet_round(
    runner: &Hosts,
    reads: &Reads,
    hosts: usize,
    tier: Option<&TierSpec>,
) -> Result<String> {
    reads.public.store(0, Ordering::SeqCst);
    reads.private.store(0, Ordering::SeqCst);
    let roots = tempfile::tempdir()?;
    let started = Instant::now();
    let reports = runner.run(roots.path(), hosts, tier)?;
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
    let public_reads = reads.public.load(Ordering::SeqCst);
    Ok(format!(
        "| {} | {hosts} | {} | {} | {public_reads} | {:.3}× | {} | {} | {} | {} | {} | {} | {} | {:.1} s |",
        if tier.is_some() {
            "with L2"
        } else {
            "without L2"
        },
        sum("files"),
        distinct.len(),
        ratio(public_reads, distinct.len()),
        reads.private.load(Ordering::SeqCst),
        sum("l2_hits"),
        sum("l2_misses"),
        sum("l2_puts"),
        sum("l2_unavailable"),
        sum("l2_retries"),
        sum("failed_skills"),
        wall.as_secs_f64(),
    ))
}

/// How hosts are started: processes, or caches in this process.
struct Hosts {
    base: String,
    processes: bool,
}

impl Hosts {
    /// Starts `n` hosts at once under `roots`, waits for all, returns their reports.
    fn run(&self, roots: &Path, n: usize, tier: Option<&TierSpec>) -> Result<Vec<Value>> {
        if !self.processes {
            let rt = tokio::runtime::Runtime::new()?;
            let tasks: Vec<_> = (0..n)
                .map(|i| {
                    let (base, root) = (self.base.clone(), roots.join(format!("host-{i}")));
                    rt.spawn(host(base, root, tier.cloned()))
                })
                .collect();
            return rt.block_on(async {
                let mut reports = Vec::new();
                for t in tasks {
                    reports.push(t.await??);
                }
                Ok(reports)
            });
        }
        let children: Vec<_> = (0..n)
            .map(|i| {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("--host")
                    .arg(&self.base)
                    .arg(roots.join(format!("host-{i}")));
                if let Some(t) = tier {
                    c.arg(&t.url)
                        .arg(t.timeout.as_millis().to_string())
                        .arg(t.claim_wait.as_millis().to_string());
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
        Ok(reports)
    }
}

/// `reads / distinct` for the table.
#[allow(clippy::cast_precision_loss)] // counts of files, far below 2^52
fn ratio(reads: u64, distinct: usize) -> f64 {
    reads as f64 / distinct.max(1) as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn join_ms(v: &[f64]) -> String {
    v.iter()
        .map(|ms| format!("{ms:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `skills` skill folders under `dir`, named `<stem>-NNN`, each with `files` files besides its
/// `SKILL.md` (256 B to 8 KiB, bytes of their own: every file is a distinct blob).
fn synthetic(dir: &Path, stem: &str, skills: usize, files: usize) -> Result<PathBuf> {
    for s in 0..skills {
        let name = format!("{stem}-{s:03}");
        let folder = dir.join(&name);
        std::fs::create_dir_all(folder.join("ref"))?;
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Synthetic {stem} skill {s} of the fleet simulation.\n---\n\n# {name}\n\nSee the files under ref/.\n"
            ),
        )?;
        for f in 0..files {
            let size = 256 << ((s + f) % 6);
            let line =
                format!("{stem} {s} file {f}: the quick brown fox jumps over the lazy dog\n");
            let body: String = line.chars().cycle().take(size).collect();
            std::fs::write(folder.join("ref").join(format!("part-{f}.md")), body)?;
        }
    }
    Ok(dir.to_path_buf())
}

/// The digest of every file under `dir`.
fn digests_under(dir: &Path) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(d)? {
            let p = e?.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(Digest::of(&std::fs::read(&p)?).to_string());
            }
        }
    }
    Ok(out)
}

/// Lists every object under the run's prefix: how many, how many are claim markers, and how
/// many are private files (by key — the private origin's folder — or by their bytes' digest).
async fn bucket_check(run: &str, private: &BTreeSet<String>) -> Result<(usize, usize, usize)> {
    let rest = run.trim_start_matches("s3://");
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()?;
    let metas: Vec<_> = store
        .list(Some(&object_store::path::Path::from(prefix)))
        .collect()
        .await;
    let (mut keys, mut claims, mut leaked) = (0, 0, 0);
    for meta in metas {
        let meta = meta?;
        keys += 1;
        let key = meta.location.to_string();
        claims += usize::from(key.contains("/claims/"));
        let bytes = store.get(&meta.location).await?.bytes().await?;
        if key.contains("/origins/private/") || private.contains(&Digest::of(&bytes).to_string()) {
            leaked += 1;
        }
    }
    Ok((keys, claims, leaked))
}

/// One host: a cold root; every skill of both origins listed, loaded and read whole.
async fn host(base: String, root: PathBuf, tier: Option<TierSpec>) -> Result<Value> {
    let started = Instant::now();
    std::fs::create_dir_all(&root)?;
    let mut builder = SkillCache::builder()
        .root(root.join("cache"))
        .key_file(root.join("host.key"))
        .approval(ApprovalPolicy::NotRequired);
    if let Some(t) = tier {
        builder = builder.l2(L2::from_url(&t.url)?
            .timeout(t.timeout)
            .claim_wait(t.claim_wait));
    }
    let cache = builder.open()?;
    let public = Origin::new("corpus")?;
    let private = Origin::new("private")?;
    cache.connect(
        public.clone(),
        Arc::new(McpSource::http(&format!("{base}/mcp"))),
    );
    cache.connect(
        private.clone(),
        Arc::new(McpSource::http(&format!("{base}/private/mcp"))),
    );
    let mut digests = BTreeSet::new();
    let (public_files, mut failed) = load_origin(&cache, &public, &mut digests).await;
    let public_ms = ms(started.elapsed());
    let (private_files, failed_private) = load_origin(&cache, &private, &mut BTreeSet::new()).await;
    failed += failed_private;
    let s = cache.stats();
    let report = json!({
            "files": public_files + private_files, "public_files": public_files,
            "failed_skills": failed, "digests": digests,
            "public_ms": public_ms, "total_ms": ms(started.elapsed()),
            "l2_hits": s[Counter::L2Hits], "l2_misses": s[Counter::L2Misses],
            "l2_puts": s[Counter::L2Puts], "l2_rejected": s[Counter::L2Rejected],
            "l2_unavailable": s[Counter::L2Unavailable], "l2_retries": s[Counter::L2Retries],
    });
    // The store's folders are read-only: purging gives them back, so that the run's temporary
    // folder can be removed by a normal user too.
    cache.purge(&public).await?;
    cache.purge(&private).await?;
    Ok(report)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Lists, loads and reads every skill of `origin`: (files read, skills failed); the digests of
/// the files read go to `digests`.
async fn load_origin(
    cache: &SkillCache,
    origin: &Origin,
    digests: &mut BTreeSet<String>,
) -> (u64, u64) {
    let (mut files, mut failed) = (0u64, 0u64);
    let listed = match cache.list(origin).await {
        Ok(listed) => listed,
        Err(e) => {
            eprintln!("fleet host: {}: {e}", origin.as_str());
            return (0, 1);
        }
    };
    for listed in listed {
        let Ok(info) = listed else {
            failed += 1;
            continue;
        };
        match async {
            let skill = cache.load(origin, &info.entry).await?;
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
    (files, failed)
}

/// A Streamable HTTP MCP server on a loopback port (one thread per connection, one JSON body
/// per POST): `/mcp` serves `public`, `/private/mcp` serves `private` with every `cacheScope`
/// hint rewritten to `private`. Every `resources/read` answered is counted; every answer waits
/// `delay` first.
fn serve_http(
    public: SkillServer,
    private: SkillServer,
    reads: Arc<Reads>,
    delay: Duration,
) -> Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (public, private, reads) = (public.clone(), private.clone(), Arc::clone(&reads));
            std::thread::spawn(move || {
                // A host that hangs up is not the coordinator's problem.
                let _ = connection(&public, &private, &reads, delay, stream);
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// Sets every `cacheScope` in `v` to `private`.
fn make_private(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "cacheScope" {
                    *child = json!("private");
                } else {
                    make_private(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_private),
        _ => {}
    }
}

fn connection(
    public: &SkillServer,
    private: &SkillServer,
    reads: &Reads,
    delay: Duration,
    stream: TcpStream,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let post = request_line.starts_with("POST ");
        let is_private = request_line.contains(" /private/");
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
            let counter = if is_private {
                &reads.private
            } else {
                &reads.public
            };
            counter.fetch_add(1, Ordering::SeqCst);
        }
        let server = if is_private { private } else { public };
        let Some(mut reply) = server.handle(&message) else {
            out.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")?;
            continue;
        };
        if is_private {
            make_private(&mut reply);
        }
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
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
