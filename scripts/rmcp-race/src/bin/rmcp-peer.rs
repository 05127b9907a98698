//! rmcp alone, as a Rust host without skillcache sweeps a server (issue 41): start the server
//! over stdio, list every skill (`list_all_skills`), read every file (`resources/read`, one at a
//! time) and check it with `SkillResource::verify`; nothing is kept. With `SWEEPS` > 1 the later
//! sweeps run in the same process, over the same connection (rmcp has no store: they fetch
//! again).
//!
//! ```text
//! rmcp-peer SWEEPS SERVER [ARGS...]
//! rmcp-peer SWEEPS http://HOST:PORT/PATH
//! ```
//! The second form connects over Streamable HTTP (rmcp's reqwest client) to a server already
//! running: the first sweep then includes connecting and initializing, not the server's start.
//! Prints one line a sweep: `sweep=N skills=S files=F bytes=B ms=T` (the first sweep's time
//! includes starting the server and initializing, as a host's first sweep does). With `SWEEPS`
//! 0 it prints the URI of every skill the server lists, one a line, and reads nothing.

use std::time::Instant;

use base64::Engine as _;
use rmcp::ServiceExt as _;
use rmcp::model::{ReadResourceRequestParams, ResourceContents, SkillResources};

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(sweeps), Some(server)) = (
        args.first().and_then(|s| s.parse::<u32>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: rmcp-peer SWEEPS SERVER [ARGS...]");
        std::process::exit(2);
    };
    let start = Instant::now();
    let client = if server.starts_with("http://") {
        let transport =
            rmcp::transport::StreamableHttpClientTransport::from_uri(server.as_str());
        ().serve(transport).await.expect("initialize")
    } else {
        let mut command = tokio::process::Command::new(server);
        command.args(&args[2..]).stderr(std::process::Stdio::null());
        let transport =
            rmcp::transport::TokioChildProcess::new(command).expect("start the server");
        ().serve(transport).await.expect("initialize")
    };
    if sweeps == 0 {
        for skill in client.peer().list_all_skills().await.expect("skills/list") {
            println!("{}", skill.uri);
        }
    }
    let mut clock = start;
    for n in 1..=sweeps {
        let (skills, files, bytes) = sweep(client.peer()).await;
        let ms = clock.elapsed().as_secs_f64() * 1e3;
        println!("sweep={n} skills={skills} files={files} bytes={bytes} ms={ms:.2}");
        clock = Instant::now();
    }
    let _ = client.cancel().await;
}

async fn sweep(peer: &rmcp::Peer<rmcp::RoleClient>) -> (usize, usize, usize) {
    let skills = peer.list_all_skills().await.expect("skills/list");
    let (mut files, mut bytes) = (0, 0);
    for skill in &skills {
        let SkillResources::Files(listed) = &skill.resources else {
            continue;
        };
        for file in listed {
            let read = peer
                .read_resource(ReadResourceRequestParams::new(&file.uri))
                .await
                .expect("resources/read");
            let data = match read.contents.first().expect("contents") {
                ResourceContents::TextResourceContents { text, .. } => text.clone().into_bytes(),
                ResourceContents::BlobResourceContents { blob, .. } => {
                    base64::engine::general_purpose::STANDARD
                        .decode(blob)
                        .expect("base64")
                }
                _ => panic!("{}: contents of a kind rmcp 3.11 did not know", file.uri),
            };
            file.verify(&data).expect("verify");
            files += 1;
            bytes += data.len();
        }
    }
    (skills.len(), files, bytes)
}
