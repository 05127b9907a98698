//! The README's host against a real server (D5): `examples/host_stdio.rs` starts
//! `skillcache serve` over stdio with the server's stderr routed away from the terminal, lists,
//! approves, loads, reads and frames; it leaves nothing behind, as a normal user too; and the
//! README shows exactly its code, so the two cannot drift.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A folder of skills to serve: the bundled samples, and one folder `serve` refuses to publish
/// (its frontmatter names another skill), about which it warns on its stderr.
fn served(dir: &Path) -> PathBuf {
    let skills = dir.join("skills");
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/skills");
    for (skill, files) in [
        (
            "release-notes",
            &["SKILL.md", "templates/notes.md", "templates/tone.md"][..],
        ),
        ("live-status", &["SKILL.md"][..]),
    ] {
        for file in files {
            let to = skills.join(skill).join(file);
            std::fs::create_dir_all(to.parent().expect("a folder")).expect("mkdir");
            std::fs::copy(samples.join(skill).join(file), &to).expect("copy a sample");
        }
    }
    std::fs::create_dir_all(skills.join("misnamed")).expect("mkdir");
    std::fs::write(
        skills.join("misnamed/SKILL.md"),
        "---\nname: other\ndescription: Named for another folder.\n---\n",
    )
    .expect("write");
    skills
}

/// Runs `command` to its end, or fails the test after two minutes (a hung server must not
/// stall the suite).
fn finish(mut command: Command) -> Output {
    command.stdin(Stdio::null());
    common::within(Duration::from_secs(120), move || command.output())
        .expect("the example finished within two minutes")
        .expect("the example ran")
}

/// The example, run with `tmp` as its temporary folder and its home: whatever it writes
/// anywhere but where it says lands in `tmp`, where the test sees it.
fn example(tmp: &Path, skills: &Path, as_nobody: bool) -> Output {
    let example = example_bin();
    let mut command = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(example);
        c
    } else {
        Command::new(example)
    };
    command
        .arg(common::bin())
        .arg(skills)
        .env("TMPDIR", tmp)
        .env("HOME", tmp)
        .env("XDG_CONFIG_HOME", tmp.join(".config"))
        .env("XDG_CACHE_HOME", tmp.join(".cache"))
        .env_remove("SKILLCACHE_ROOT")
        .env_remove("SKILLCACHE_KEY_FILE");
    finish(command)
}

/// The example's binary, rebuilt when its source is newer: a filtered `cargo test` does not
/// build examples, and a stale one would test old code.
fn example_bin() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/host_stdio.rs");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let exe = std::env::current_exe().expect("test binary");
    let built = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("examples/host_stdio");
    if modified(&built) < modified(&source) {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--example", "host_stdio"])
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --example host_stdio");
    }
    built
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn d5_the_host_example_lists_approves_loads_reads_and_frames_against_skillcache_serve() {
    let dir = common::scratch();
    let skills = served(dir.path());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    let out = example(&tmp, &skills, false);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Approved, loaded, verified and framed for the model: origin and URI in the frame.
    assert!(
        stdout.contains(
            " from=\"MCP server\" origin=\"docs\" uri=\"skill://release-notes/SKILL.md\" "
        ) && stdout.contains("<mcp-skill-file boundary=\"")
            && stdout.contains("name: release-notes"),
        "{stdout}"
    );
    for (file, size) in [
        ("SKILL.md", 499),
        ("templates/notes.md", 77),
        ("templates/tone.md", 158),
    ] {
        let line = format!("read skill://release-notes/{file} ({size} bytes)");
        assert!(stdout.contains(&line), "{line} in {stdout}");
    }
    // The dynamic skill is declined, and the report names the skill and its origin; it is the
    // only line on stderr: the server's own warning (the misnamed folder) went to its log.
    assert_eq!(
        stderr.trim_end(),
        "not loaded: skill skill://live-status/SKILL.md from origin docs declined: it is dynamic \
         (no digests): declined unless dynamic skills are allowed, and never approved",
    );
    assert!(
        !stdout.contains("misnamed") && !stdout.contains("live-status"),
        "{stdout}"
    );
}

#[test]
fn d5_without_the_example_s_routing_the_server_s_warnings_reach_the_terminal() {
    // What the example's stderr routing is for: `serve` warns on its stderr about every folder
    // it does not publish, so a host that lets the child inherit stderr shows the user those
    // warnings.
    let dir = common::scratch();
    let skills = served(dir.path());
    let mut serve = Command::new(common::bin());
    serve.arg("serve").arg(&skills);
    let out = finish(serve);
    assert!(
        text(&out.stderr).contains("not publishing (skill: misnamed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn d5_the_host_example_leaves_nothing_behind_as_a_normal_user() {
    // Root ignores permission bits, so a read-only store folder would not show as a leak: as
    // root, the example runs as user nobody.
    let as_nobody = rustix::process::geteuid().is_root();
    assert!(
        !as_nobody || Path::new("/usr/bin/setpriv").exists(),
        "running as root needs setpriv to run the example as a normal user"
    );
    let dir = common::scratch();
    let skills = served(dir.path());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    if as_nobody {
        // The scratch folder is 0700 and root's: nobody needs to reach the skills and its own
        // temporary folder inside it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::chown(&tmp, Some(65534), Some(65534)).expect("chown");
    }
    let out = example(&tmp, &skills, as_nobody);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Its cache root, host key and server log were all inside its temporary folder, and that
    // folder is gone: nothing under the home, nothing left in the temporary directory.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("read the temporary directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert!(left.is_empty(), "the example left {left:?}");
}

#[test]
fn d5_the_readme_shows_the_host_example_as_it_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("examples/host_stdio.rs")).expect("example");
    // The example's code, without its module docs.
    let code: Vec<&str> = example
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .collect();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    // Every Rust block of the README as a reader of the docs compiles it: hidden lines shown.
    let blocks: Vec<Vec<&str>> = readme
        .split("```rust")
        .skip(1)
        .filter_map(|b| {
            b.split_once('\n')
                .and_then(|(_, rest)| rest.split_once("\n```"))
        })
        .map(|(block, _)| {
            block
                .lines()
                .map(|l| match l {
                    "#" => "",
                    _ => l.strip_prefix("# ").unwrap_or(l),
                })
                .collect()
        })
        .collect();
    assert!(
        blocks.contains(&code),
        "README.md has no Rust block with exactly the code of examples/host_stdio.rs \
         (lines hidden with `# ` count as shown)"
    );
}

#[test]
fn u1_the_host_example_prints_a_readable_error_and_its_cause_not_a_debug_dump() {
    let dir = common::scratch();
    let skills = served(dir.path());
    let mut command = Command::new(example_bin());
    command
        .arg(dir.path().join("no-such-server"))
        .arg(&skills)
        .env("TMPDIR", dir.path())
        .env_remove("SKILLCACHE_ROOT")
        .env_remove("SKILLCACHE_KEY_FILE");
    let out = finish(command);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains("origin docs"),
        "{stderr}"
    );
    // No Debug text: no struct or enum spelled out, no escaped quotes.
    for debug in ["{ ", "Transport", "Some(", "\\\""] {
        assert!(!stderr.contains(debug), "{debug} in {stderr}");
    }
}
