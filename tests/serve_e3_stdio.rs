//! R-E3: `serve` over stdio answers every request — with `-32700` for one that is not JSON —
//! and holds a bounded amount for a client that does not read its answers (backpressure, not
//! a queue). Each test runs `skillcache serve` as a child, under a deadline; memory is the
//! child's own (`VmHWM`).

mod common;
#[path = "common/http.rs"]
mod http;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

/// A served folder: one skill, `notes`, with a 200 KB `refs/big.md`.
fn folder() -> common::Scratch {
    let tmp = common::scratch();
    let skill = tmp.path().join("served/notes");
    std::fs::create_dir_all(skill.join("refs")).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Notes.\n---\n# Notes\n",
    )
    .expect("write");
    std::fs::write(skill.join("refs/big.md"), "words ".repeat(200_000 / 6)).expect("write");
    tmp
}

/// `skillcache serve DIR` over pipes, initialized (2025-11-25).
struct StdioServe {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl StdioServe {
    fn start(tmp: &common::Scratch) -> StdioServe {
        StdioServe::start_with(tmp, Stdio::null(), &[])
    }

    /// As [`start`](Self::start), with `serve`'s stderr sent to `stderr` and `args` after the
    /// folder.
    fn start_with(tmp: &common::Scratch, stderr: Stdio, args: &[&str]) -> StdioServe {
        let mut child = Command::new(http::serve_bin())
            .arg("serve")
            .arg(tmp.path().join("served"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start serve");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = StdioServe {
            child,
            stdin,
            stdout,
        };
        s.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e3","version":"1"}}}"#);
        assert_eq!(s.recv()["id"], 0);
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write");
        stdin.flush().expect("flush");
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn peak_kib(&self) -> u64 {
        http::proc_status(self.child.id(), "VmHWM:")
    }
}

impl Drop for StdioServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn e3_a_line_that_is_not_json_gets_a_parse_error_with_id_null_and_the_session_goes_on() {
    let tmp = folder();
    let answers = common::within(Duration::from_secs(60), move || {
        let mut serve = StdioServe::start(&tmp);
        serve.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\" SECRET");
        let parse = serve.recv();
        serve.send("[1,2,3]");
        let batch = serve.recv();
        serve.send(
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":5,"x":"SECRET"}}"#,
        );
        let params = serve.recv();
        serve.send(r#"{"jsonrpc":"2.0","id":4,"method":"skills/SECRET","params":{}}"#);
        let unknown = serve.recv();
        serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
        let ping = serve.recv();
        (parse, batch, params, unknown, ping)
    })
    .expect("every line was answered before the deadline");
    let (parse, batch, params, unknown, ping) = answers;
    for (answer, code, id) in [(&params, -32602, 3), (&unknown, -32601, 4)] {
        assert_eq!(answer["error"]["code"], json!(code), "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert!(!answer.to_string().contains("SECRET"), "{answer}");
    }
    assert_eq!(parse["error"]["code"], json!(-32700), "{parse}");
    assert_eq!(parse["id"], Value::Null, "{parse}");
    assert!(
        !parse.to_string().contains("SECRET"),
        "no answer quotes the line"
    );
    assert_eq!(batch["error"]["code"], json!(-32600), "{batch}");
    assert_eq!(ping["id"], 2, "the session goes on: {ping}");
    assert!(ping.get("result").is_some(), "{ping}");
}

/// The ordinary error answers of a session — a skill or a file that is not served, a method it
/// does not know — and what `serve` writes to its stderr meanwhile: at the default level nothing
/// (the answers are the client's business), and never a `Debug` dump at any level (N4).
fn stderr_of_a_session_of_error_answers(args: &[&str]) -> String {
    let tmp = folder();
    let log = tmp.path().join("serve.log");
    let file = std::fs::File::create(&log).expect("create the log");
    let mut serve = StdioServe::start_with(&tmp, Stdio::from(file), args);
    let answers = common::within(Duration::from_secs(60), move || {
        serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://missing/SKILL.md"}}"#);
        let get = serve.recv();
        serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://notes/absent.md"}}"#);
        let read = serve.recv();
        serve.send(r#"{"jsonrpc":"2.0","id":3,"method":"skills/frobnicate","params":{}}"#);
        let unknown = serve.recv();
        // End the session and let `serve` exit by itself, so all it had to say is written.
        drop(serve.stdin.take());
        let _ = serve.child.wait();
        (get, read, unknown)
    })
    .expect("answered and ended before the deadline");
    let (get, read, unknown) = answers;
    for (answer, code) in [(&get, -32602), (&read, -32602), (&unknown, -32601)] {
        assert_eq!(answer["error"]["code"], json!(code), "{answer}");
    }
    std::fs::read_to_string(&log).expect("read the log")
}

/// What a `Debug` dump looks like in a log line: a struct or enum printed with its fields.
fn has_debug_text(log: &str) -> bool {
    [
        "ErrorData",
        "ErrorCode(",
        "{ code:",
        "data: None",
        "Some(",
        "message: \"",
    ]
    .iter()
    .any(|mark| log.contains(mark))
}

#[test]
fn n4_serve_says_nothing_on_stderr_for_ordinary_error_answers() {
    let log = stderr_of_a_session_of_error_answers(&[]);
    assert!(
        log.trim().is_empty(),
        "serve's stderr at the default level: {log}"
    );
}

#[test]
fn n4_serve_writes_no_debug_text_even_when_verbose() {
    for verbose in ["-v", "-vv"] {
        let log = stderr_of_a_session_of_error_answers(&[verbose]);
        assert!(
            !has_debug_text(&log),
            "serve {verbose} wrote Debug text: {log}"
        );
    }
}

#[test]
fn e3_a_client_that_never_reads_its_answers_cannot_grow_serves_memory() {
    let tmp = folder();
    let written = Arc::new(AtomicUsize::new(0));
    let counted = written.clone();
    let peak = common::within(Duration::from_secs(300), move || {
        let mut serve = StdioServe::start(&tmp);
        let mut stdin = serve.stdin.take().expect("stdin");
        // 3000 reads of a 200 KB file, pipelined; not one answer is read.
        std::thread::spawn(move || {
            for id in 1..=3_000 {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"skill://notes/refs/big.md"}}}}"#
                );
                if writeln!(stdin, "{line}").is_err() {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let _ = stdin.flush();
            // Kept open: the client is still there, it just does not read.
            std::thread::sleep(Duration::from_secs(3600));
        });
        // Until the writer makes no progress for two seconds (serve stopped reading), or has
        // written everything (serve read it all).
        let mut last = 0;
        loop {
            std::thread::sleep(Duration::from_secs(2));
            let now = written.load(Ordering::SeqCst);
            if now == last || now == 3_000 {
                break;
            }
            last = now;
        }
        (serve.peak_kib(), written.load(Ordering::SeqCst))
    });
    let (peak_kib, sent) = peak.expect("measured before the deadline");
    println!(
        "{sent} requests written before serve stopped reading; peak {} MiB",
        peak_kib / 1024
    );
    assert!(
        sent < 3_000,
        "serve read all 3000 requests although none was answered"
    );
    assert!(
        peak_kib < 100 * 1024,
        "unread answers took serve to {} MiB",
        peak_kib / 1024
    );
}

#[test]
fn e3_requests_pipelined_by_a_client_that_reads_are_all_answered() {
    let tmp = folder();
    let ids = common::within(Duration::from_secs(120), move || {
        let mut serve = StdioServe::start(&tmp);
        let mut stdin = serve.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || {
            for id in 1..=200 {
                let method = if id % 2 == 0 { "resources/read" } else { "skills/list" };
                writeln!(
                    stdin,
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"uri":"skill://notes/refs/big.md"}}}}"#
                )
                .expect("write");
            }
            stdin
        });
        let mut ids: Vec<u64> = (0..200)
            .map(|_| serve.recv()["id"].as_u64().expect("an id"))
            .collect();
        drop(writer.join().expect("writer"));
        ids.sort_unstable();
        ids
    })
    .expect("all answered before the deadline");
    assert_eq!(ids, (1..=200).collect::<Vec<_>>());
}

/// Round 27 of review: `serve` read and wrote its stdin and stdout non-blocking by setting the
/// mode on the standard descriptors themselves, which everything holding them shares: stderr
/// when it is the same pipe (`2>&1`), and the shell that started it, whose next command then
/// read and wrote non-blocking pipes. After `serve` ends, the descriptors it was given are as
/// they were: blocking.
#[test]
fn e3_serve_leaves_the_pipes_it_was_given_blocking() {
    let tmp = folder();
    let script = format!(
        "'{}' serve '{}' 2>&1; python3 -c 'import fcntl, os; print(fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK, fcntl.fcntl(1, fcntl.F_GETFL) & os.O_NONBLOCK)'",
        common::bin().display(),
        tmp.path().join("served").display()
    );
    let out = common::within(Duration::from_secs(60), move || {
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        // No request: stdin ends at once, and so does serve.
        drop(child.stdin.take());
        child.wait_with_output().expect("output")
    })
    .expect("serve ended");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().last(), Some("0 0"), "{text}");
}

/// Round 28 of review: a client that subscribed to several files is stuck (reads nothing) for
/// longer than a notification's 5 s bound while they all change in one scan. Once it reads, it
/// is told of every one: the notifications of one change are not sent one after another under
/// one bound, which lost every URI after the first held up.
#[test]
fn e3_a_client_stuck_past_the_bound_is_told_of_every_file_that_changed_once_it_reads() {
    let tmp = folder();
    let refs = tmp.path().join("served/notes/refs");
    let names: Vec<String> = (0..6).map(|i| format!("f{i}.md")).collect();
    for n in &names {
        std::fs::write(refs.join(n), "before").expect("write");
    }
    let told = common::within(Duration::from_secs(60), move || {
        let mut serve = StdioServe::start_with(&tmp, Stdio::null(), &["--watch-ms", "100"]);
        for (id, n) in (1..).zip(&names) {
            serve.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"skill://notes/refs/{n}"}}}}"#));
            assert_eq!(serve.recv()["id"], id);
        }
        // Stuck: answers of 200 KB that nobody reads fill the pipe, so every later line waits.
        for id in 100..104 {
            serve.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"skill://notes/refs/big.md"}}}}"#));
        }
        std::thread::sleep(Duration::from_millis(500));
        for n in &names {
            std::fs::write(refs.join(n), "after, longer").expect("write");
        }
        std::thread::sleep(Duration::from_secs(7));
        // Reads until each changed file is told (a lost one: the deadline below).
        let mut told = std::collections::BTreeSet::new();
        while told.len() < names.len() {
            let line = serve.recv();
            if line["method"] == "notifications/resources/updated" {
                told.insert(line["params"]["uri"].as_str().unwrap_or_default().to_owned());
            }
        }
        told
    })
    .expect("every changed file told within a minute of the change");
    let want: std::collections::BTreeSet<String> = (0..6)
        .map(|i| format!("skill://notes/refs/f{i}.md"))
        .collect();
    assert_eq!(told, want);
}

/// Round 30 of review (H): a 2025-11-25 session subscribing to URI after URI took serve to
/// 600 MB. A session holds at most 1,024 subscriptions (and 256 KiB of URIs): past that, a
/// subscription is refused with an error that says so, and the session goes on.
#[test]
fn e3_a_session_subscribes_to_at_most_the_bound_and_is_told_so_past_it() {
    let tmp = folder();
    let answers = common::within(Duration::from_secs(60), move || {
        let mut serve = StdioServe::start_with(&tmp, Stdio::null(), &[]);
        let mut answers = Vec::new();
        for id in 1..=1025 {
            serve.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/subscribe","params":{{"uri":"skill://notes/f{id}.md"}}}}"#));
            answers.push(serve.recv());
        }
        // Again an URI subscribed already: not a new one, answered as before.
        serve.send(r#"{"jsonrpc":"2.0","id":2000,"method":"resources/subscribe","params":{"uri":"skill://notes/f1.md"}}"#);
        answers.push(serve.recv());
        answers
    })
    .expect("answered within a minute");
    assert!(
        answers[..1024].iter().all(|a| a.get("result").is_some()),
        "{:?}",
        answers[0]
    );
    let refused = &answers[1024];
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 1024 files"),
        "{refused}"
    );
    assert!(answers[1025].get("result").is_some(), "{}", answers[1025]);
}
