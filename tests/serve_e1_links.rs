//! R-E1: `serve` answers only the bytes it published, read from the folder's descriptor.
//!
//! A process that can write into the served folder swaps a served file (or the folder it is
//! in) for a symbolic link between the scan and a read: to a file outside the folder, to
//! `/dev/zero`, or for a FIFO. Each race runs against `skillcache serve --http` (the exposure
//! is worst there: any local client), bounded in requests and under a deadline; `serve` must
//! answer every request with the published bytes or an error, never other bytes, in bounded
//! memory, and without a request left hanging.
//!
//! The races run with `--held-mib 0`: a server that keeps the bytes its scan hashed answers
//! them without touching the folder, so only the read from the folder can be raced. One race
//! runs as `serve` does by default, and must answer every request with the published bytes.

mod common;
#[path = "common/http.rs"]
mod http;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use http::{ServeChild, modern};

/// The published file's bytes: the same length as the secret, so only the digest can tell.
const INSIDE: &[u8] = b"inside: the published notes, nothing else....\n";
const SECRET: &[u8] = b"OUTSIDE-SECRET: bytes serve must never answer\n";
const URI: &str = "skill://notes/refs/doc.md";
const REQUESTS: usize = 300;

/// A served folder with one skill (`notes`, its `refs/doc.md` the target), a copy of the
/// published bytes outside it (for putting them back), and a secret outside it.
struct Place {
    tmp: common::Scratch,
}

impl Place {
    fn new() -> Place {
        assert_eq!(INSIDE.len(), SECRET.len());
        let tmp = common::scratch();
        let refs = tmp.path().join("served/notes/refs");
        std::fs::create_dir_all(&refs).expect("mkdir");
        std::fs::write(
            tmp.path().join("served/notes/SKILL.md"),
            "---\nname: notes\ndescription: Notes.\n---\n# Notes\n",
        )
        .expect("write");
        std::fs::write(refs.join("doc.md"), INSIDE).expect("write");
        std::fs::create_dir_all(tmp.path().join("keep")).expect("mkdir");
        std::fs::write(tmp.path().join("keep/doc.md"), INSIDE).expect("write");
        // The outside folder looks like `refs/`: a swapped folder offers a same-named file.
        std::fs::create_dir_all(tmp.path().join("outside")).expect("mkdir");
        std::fs::write(tmp.path().join("outside/doc.md"), SECRET).expect("write");
        Place { tmp }
    }

    fn served(&self) -> PathBuf {
        self.tmp.path().join("served")
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }
}

/// Puts what `make` plants (given where, and the temporary folder) in the published file's
/// place and the published file back, over and over, until `stop`; each swap is one atomic
/// rename. Returns how many swaps it made.
fn swapper(
    place: &Place,
    stop: Arc<AtomicBool>,
    make: impl Fn(&Path, &Path) + Send + 'static,
) -> std::thread::JoinHandle<usize> {
    let root = place.tmp.path().to_owned();
    let doc = place.path("served/notes/refs/doc.md");
    let refs = place.path("served/notes/refs");
    let keep = place.path("keep/doc.md");
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::SeqCst) {
            let planted = refs.join(".planted");
            let _ = std::fs::remove_file(&planted);
            make(&planted, &root);
            let _ = std::fs::rename(&planted, &doc);
            std::thread::sleep(Duration::from_micros(300));
            let back = refs.join(".back");
            let _ = std::fs::remove_file(&back);
            let _ = std::fs::hard_link(&keep, &back);
            let _ = std::fs::rename(&back, &doc);
            std::thread::sleep(Duration::from_micros(300));
            swaps += 1;
        }
        swaps
    })
}

/// What the reads got.
#[derive(Debug, Default)]
struct Tally {
    inside: usize,
    errors: usize,
    other: Vec<String>,
}

/// Reads the target `n` times; every answer is tallied.
fn read_many(serve: &ServeChild, n: usize) -> Tally {
    let mut tally = Tally::default();
    for id in 0..n {
        let reply = modern(
            &serve.authority,
            id as u64,
            "resources/read",
            json!({"uri": URI}),
        )
        .expect("an answer");
        let message = reply.json();
        if message.get("error").is_some() {
            tally.errors += 1;
            continue;
        }
        let text = message["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default();
        if text.as_bytes() == INSIDE {
            tally.inside += 1;
        } else {
            tally.other.push(message.to_string());
        }
    }
    tally
}

/// After the race, the folder as published again: the next reads are the published bytes.
fn settles(serve: &ServeChild) {
    for _ in 0..200 {
        let message = modern(
            &serve.authority,
            9_999,
            "resources/read",
            json!({"uri": URI}),
        )
        .expect("an answer")
        .json();
        if message["result"]["contents"][0]["text"].as_str()
            == Some(std::str::from_utf8(INSIDE).expect("utf-8"))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("serve never answered the published bytes again");
}

/// Runs one race against a fresh `serve`: `make` plants the thing; returns the tally and the
/// server, still running.
fn race(make: impl Fn(&Path, &Path) + Send + 'static) -> (Tally, usize, ServeChild, Place) {
    let place = Place::new();
    let serve = ServeChild::start(&place.served(), &["--watch-ms", "20", "--held-mib", "0"]);
    settles(&serve);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(&place, stop.clone(), make);
    let tally = read_many(&serve, REQUESTS);
    stop.store(true, Ordering::SeqCst);
    let swaps = swaps.join().expect("swapper");
    settles(&serve);
    (tally, swaps, serve, place)
}

#[test]
fn e1_a_served_file_swapped_for_a_symlink_is_never_answered_with_outside_bytes() {
    let (tally, swaps) = common::within(Duration::from_secs(300), || {
        let (tally, swaps, _serve, _place) = race(|at, root| {
            let _ = std::os::unix::fs::symlink(root.join("outside/doc.md"), at);
        });
        (tally, swaps)
    })
    .expect("every request was answered before the deadline");
    println!("{swaps} swaps; {tally:?}");
    assert!(swaps > 0, "the race ran");
    assert!(
        tally.other.is_empty(),
        "{} of {REQUESTS} answers carried other bytes ({} published, {} errors): {:?}",
        tally.other.len(),
        tally.inside,
        tally.errors,
        tally.other.first()
    );
    assert_eq!(tally.inside + tally.errors, REQUESTS);
}

#[test]
fn e1_a_server_holding_what_it_hashed_answers_the_published_bytes_through_every_swap() {
    let tally = common::within(Duration::from_secs(300), || {
        let place = Place::new();
        let serve = ServeChild::start(&place.served(), &["--watch-ms", "20"]);
        settles(&serve);
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = swapper(&place, stop.clone(), |at, root| {
            let _ = std::os::unix::fs::symlink(root.join("outside/doc.md"), at);
        });
        // Held by the first scan. A later scan that finds the link publishes no skill (reads
        // are errors); one that finds the bytes back holds them again.
        let tally = read_many(&serve, REQUESTS);
        stop.store(true, Ordering::SeqCst);
        assert!(swaps.join().expect("swapper") > 0, "the race ran");
        tally
    })
    .expect("every request was answered before the deadline");
    println!("held: {tally:?}");
    assert!(
        tally.other.is_empty(),
        "other bytes: {:?}",
        tally.other.first()
    );
    assert_eq!(tally.inside + tally.errors, REQUESTS);
}

#[test]
fn e1_the_folder_of_a_served_file_swapped_for_a_link_is_never_followed() {
    let tally = common::within(Duration::from_secs(300), || {
        let place = Place::new();
        let serve = ServeChild::start(&place.served(), &["--watch-ms", "20", "--held-mib", "0"]);
        settles(&serve);
        let (refs, real, outside) = (
            place.path("served/notes/refs"),
            place.path("served/notes/.refs-real"),
            place.path("outside"),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let swapping = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let _ = std::fs::rename(&refs, &real);
                    let _ = std::os::unix::fs::symlink(&outside, &refs);
                    std::thread::sleep(Duration::from_micros(300));
                    let _ = std::fs::remove_file(&refs);
                    let _ = std::fs::rename(&real, &refs);
                    std::thread::sleep(Duration::from_micros(300));
                }
            })
        };
        let tally = read_many(&serve, REQUESTS);
        stop.store(true, Ordering::SeqCst);
        swapping.join().expect("swapper");
        settles(&serve);
        tally
    })
    .expect("every request was answered before the deadline");
    println!("folder swap: {tally:?}");
    assert!(
        tally.other.is_empty(),
        "other bytes answered: {:?}",
        tally.other.first()
    );
}

#[test]
fn e1_a_served_file_swapped_for_a_link_to_dev_zero_is_refused_in_bounded_memory() {
    let (tally, peak_kib) = common::within(Duration::from_secs(300), || {
        let (tally, _, serve, _place) = race(|at, _| {
            let _ = std::os::unix::fs::symlink("/dev/zero", at);
        });
        (tally, serve.peak_kib())
    })
    .expect("every request was answered before the deadline");
    println!(
        "/dev/zero: {tally:?}; serve peaked at {} MiB",
        peak_kib / 1024
    );
    assert!(tally.other.is_empty(), "{:?}", tally.other.first());
    assert!(
        peak_kib < 150 * 1024,
        "serve peaked at {} MiB while a served file was a link to /dev/zero",
        peak_kib / 1024
    );
}

#[test]
fn e1_a_served_file_swapped_for_a_fifo_never_leaves_a_request_waiting() {
    let answered = Arc::new(AtomicUsize::new(0));
    let counted = answered.clone();
    let outcome = common::within(Duration::from_secs(300), move || {
        let place = Place::new();
        let serve = ServeChild::start(&place.served(), &["--watch-ms", "20", "--held-mib", "0"]);
        settles(&serve);
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = swapper(&place, stop.clone(), |at, _| {
            let _ = rustix::fs::mknodat(
                rustix::fs::CWD,
                at,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            );
        });
        let mut tally = Tally::default();
        for _ in 0..REQUESTS / 50 {
            let part = read_many(&serve, 50);
            counted.fetch_add(50, Ordering::SeqCst);
            tally.inside += part.inside;
            tally.errors += part.errors;
            tally.other.extend(part.other);
        }
        stop.store(true, Ordering::SeqCst);
        swaps.join().expect("swapper");
        settles(&serve);
        (tally, serve.threads())
    });
    let Some((tally, threads)) = outcome else {
        panic!(
            "a request hung on a FIFO: {} of {REQUESTS} answered before the deadline",
            answered.load(Ordering::SeqCst)
        );
    };
    println!("FIFO: {tally:?}; serve holds {threads} threads");
    assert!(tally.other.is_empty(), "{:?}", tally.other.first());
    assert!(threads < 64, "serve holds {threads} threads after the race");
}

#[test]
fn e1_a_file_changed_between_scan_and_read_is_an_error_answer_and_a_rescan() {
    let message = common::within(Duration::from_secs(120), || {
        let place = Place::new();
        // A watch interval far longer than the test: only the read's own rescan can publish
        // the new bytes.
        let serve = ServeChild::start(
            &place.served(),
            &["--watch-ms", "3600000", "--held-mib", "0"],
        );
        settles(&serve);
        std::fs::write(place.path("served/notes/refs/doc.md"), SECRET).expect("edit");
        let first = modern(&serve.authority, 1, "resources/read", json!({"uri": URI}))
            .expect("an answer")
            .json();
        let entry = modern(
            &serve.authority,
            2,
            "skills/get",
            json!({"uri": "skill://notes/SKILL.md"}),
        )
        .expect("an answer")
        .json();
        (first, entry)
    })
    .expect("answered before the deadline");
    let (first, entry) = message;
    assert_eq!(first["error"]["code"], json!(-32603), "{first}");
    assert!(!first.to_string().contains("OUTSIDE"), "{first}");
    let listed: Vec<Value> = entry["result"]["skill"]["resources"]
        .as_array()
        .expect("resources")
        .clone();
    let digest = skillcache::Digest::of(SECRET).to_string();
    assert!(
        listed.iter().any(|r| r["digest"] == json!(digest)),
        "the rescan published the file as it now is: {entry}"
    );
}
