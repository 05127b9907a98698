//! `serve`'s request handling: one line from a client, as the stdio transport reads it
//! (`server::read_message`: `-32700`, `-32600`, `-32602`), then the answer `SkillServer` gives
//! it, over a small served folder. Also the same bytes handed to `SkillServer::handle` as JSON
//! directly, so params rmcp's types would refuse still reach our own checks.
//!
//! Properties: no panic; every answer is a JSON-RPC message with the request's id; an error
//! message is one of the server's own (digits aside) and so quotes nothing of the request
//! (R-E3); memory stays bounded (libFuzzer's RSS limit, inputs up to its length bound).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use skillcache::local::SkillServer;

/// The messages an answer may carry, digits removed.
const OURS: [&str; 13] = [
    "params.uri is required",
    "params.uri is not a valid file URI",
    "no skill is served at that URI",
    "no resource is served at that URI",
    "that URI is not a directory served here",
    "params.cursor is not a cursor this server gave out",
    "method not found",
    "the file changed since it was published; its skill was scanned again (get the skill again)",
    "Invalid Request: not a JSON-RPC . message",
    "Invalid params: they do not fit the method",
    "Parse error: not JSON (Syntax at line , column )",
    "Parse error: not JSON (Eof at line , column )",
    "Parse error: not JSON (Data at line , column )",
];

fn server() -> &'static SkillServer {
    static SERVER: OnceLock<(tempfile::TempDir, SkillServer)> = OnceLock::new();
    let (_, server) = SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, extra) in [("notes", "refs/guide.md"), ("live", "status.txt")] {
            let skill = dir.path().join(name);
            std::fs::create_dir_all(skill.join("refs")).expect("mkdir");
            std::fs::write(
                skill.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: The {name} skill.\n---\n# {name}\n"),
            )
            .expect("write");
            std::fs::write(skill.join(extra), b"some text\n\x01\x02").expect("write");
        }
        let server = SkillServer::new(dir.path())
            .directory_read(true)
            .dynamic("live")
            .watch_interval(std::time::Duration::from_secs(3600));
        (dir, server)
    });
    server
}

fn check(answer: &Value, id: Option<&Value>) {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    if let Some(id) = id {
        assert_eq!(&answer["id"], id, "{answer}");
    }
    if let Some(error) = answer.get("error") {
        let code = error["code"].as_i64().expect("a code");
        assert!(
            [-32700, -32600, -32601, -32602, -32603].contains(&code),
            "{answer}"
        );
        let message: String = error["message"]
            .as_str()
            .expect("a message")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        assert!(OURS.contains(&message.as_str()), "a message not of ours: {message:?}");
    } else {
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

fuzz_target!(|data: &[u8]| {
    let server = server();
    match skillcache::server::read_message(data) {
        Err(answer) => check(&answer, None),
        Ok(None) => {}
        Ok(Some(message)) => {
            let value = serde_json::to_value(&message).expect("a parsed message serializes");
            if let Some(answer) = server.handle(&value) {
                check(&answer, value.get("id"));
            }
        }
    }
    if let Ok(value) = serde_json::from_slice::<Value>(data)
        && let Some(answer) = server.handle(&value)
    {
        check(&answer, value.get("id"));
    }
});
