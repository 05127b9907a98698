//! docs/cli.md against the binary (U3): every ```` ```console ```` block of the document is a
//! transcript that runs here, and every option a command's `--help` lists is documented there.
//! An output change fails this test until the document changes with it.
//!
//! A transcript is a run of `$ COMMAND` lines, each followed by what it prints (stdout and stderr
//! as one stream, in the order written). A command may go on over the next lines of a heredoc
//! (`<<'EOF'` … `EOF`). Each block runs in one `bash` from the repository's top folder, with the
//! built `skillcache` first on `PATH`, `HOME` and `TMPDIR` in a scratch folder and no
//! `SKILLCACHE_*` variable of the caller's. Expected and printed lines are compared after
//! [`normalize`] (the seconds of "fetched N s ago"); an expected line may hold `[..]`, which
//! matches any text within the line.

#![allow(missing_docs)]

mod common;

#[path = "common/cli_env.rs"]
mod cli_env;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cli_env::bin;

/// One `$` line of a transcript and what the document says it prints.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    std::fs::read_to_string(path).expect("read docs/cli.md")
}

/// Every ```` ```console ```` block of `text`, as its steps.
fn transcripts(text: &str) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != "```console" {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| l.trim_end() != "```")
            .collect();
        blocks.push(steps(&body));
    }
    blocks
}

/// The steps of one block: each `$ ` line (with its heredoc, if any) and the lines after it.
fn steps(body: &[&str]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = body.iter();
    while let Some(line) = lines.next() {
        if let Some(command) = line.strip_prefix("$ ") {
            let mut command = command.to_owned();
            if let Some(tag) = heredoc_tag(&command) {
                for more in lines.by_ref() {
                    command.push('\n');
                    command.push_str(more);
                    if more.trim_end() == tag {
                        break;
                    }
                }
            }
            steps.push(Step {
                command,
                expected: Vec::new(),
            });
        } else {
            let step = steps
                .last_mut()
                .unwrap_or_else(|| panic!("output before any command: {line:?}"));
            step.expected.push((*line).to_owned());
        }
    }
    steps
}

/// The word that ends a heredoc the command opens (`<<'EOF'`, `<<EOF`).
fn heredoc_tag(command: &str) -> Option<String> {
    let after = command.split("<<").nth(1)?;
    let tag = after.split_whitespace().next()?;
    Some(tag.trim_matches(|c| c == '\'' || c == '"').to_owned())
}

/// What may differ from run to run, made the same on both sides: how many seconds ago an
/// entry was fetched.
fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("fetched ") {
        let (before, after) = rest.split_at(at + "fetched ".len());
        out.push_str(before);
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with(" s ago") {
            out.push('N');
            rest = &after[digits..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `expected` (which may hold `[..]`) matches `actual`.
fn matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (normalize(expected), normalize(actual));
    let mut parts = expected.split("[..]");
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The marker printed before each step's output.
fn marker(i: usize) -> String {
    format!("\u{1e}step {i}\u{1e}\n")
}

/// Runs one block's steps in one shell and returns what each printed.
fn run(steps: &[Step], home: &Path) -> Vec<String> {
    let mut script = String::from("exec 2>&1\n");
    for (i, step) in steps.iter().enumerate() {
        let _ = writeln!(script, "printf '{}'", marker(i).replace('\n', "\\n"));
        script.push_str(&step.command);
        script.push('\n');
    }
    let bin_dir = PathBuf::from(bin()).parent().expect("bin dir").to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin_dir];
    paths.extend(std::env::split_paths(&path));
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(script)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("HOME", home)
        .env("TMPDIR", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("RUST_LOG");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SKILLCACHE_") {
            command.env_remove(name);
        }
    }
    let out = common::within(Duration::from_secs(300), move || command.output())
        .expect("the transcript ran within 5 minutes")
        .expect("run bash");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut outputs = Vec::with_capacity(steps.len());
    for i in 0..steps.len() {
        let start = text
            .find(&marker(i))
            .map_or(text.len(), |at| at + marker(i).len());
        let end = text[start..]
            .find(&marker(i + 1))
            .map_or(text.len(), |at| start + at);
        outputs.push(text[start..end].to_owned());
    }
    outputs
}

#[test]
fn u3_every_console_transcript_of_docs_cli_md_prints_what_the_document_says() {
    let blocks = transcripts(&doc());
    assert!(!blocks.is_empty(), "docs/cli.md has console transcripts");
    let mut failures = Vec::new();
    for steps in &blocks {
        let home = common::scratch();
        let outputs = run(steps, home.path());
        for (step, actual) in steps.iter().zip(&outputs) {
            let actual: Vec<&str> = actual.lines().collect();
            let same = actual.len() == step.expected.len()
                && step
                    .expected
                    .iter()
                    .zip(&actual)
                    .all(|(e, a)| matches(e, a));
            if !same {
                failures.push(format!(
                    "$ {}\n--- the document says:\n{}\n--- the binary printed:\n{}",
                    step.command,
                    step.expected.join("\n"),
                    actual.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

/// The commands `skillcache --help` lists.
fn commands() -> Vec<String> {
    let out = Command::new(bin())
        .arg("--help")
        .output()
        .expect("run --help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The long options `skillcache COMMAND --help` lists.
fn options(command: &str) -> Vec<String> {
    let out = Command::new(bin())
        .args([command, "--help"])
        .output()
        .expect("run COMMAND --help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .filter_map(|l| {
            l.split(|c: char| c.is_whitespace() || c == ',')
                .find(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches("...").to_owned())
        })
        .filter(|o| o != "--help" && o != "--version")
        .collect()
}

#[test]
fn u3_docs_cli_md_names_every_command_and_every_option_each_command_takes() {
    let doc = doc();
    let commands = commands();
    assert!(commands.len() >= 14, "{commands:?}");
    let mut missing = Vec::new();
    for command in &commands {
        if !doc.contains(&format!("  {command} ")) {
            missing.push(format!("the command {command}"));
        }
        for option in options(command) {
            let named = doc.match_indices(&option).any(|(at, _)| {
                !doc[at + option.len()..]
                    .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
            });
            if !named {
                missing.push(format!("{command} {option}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md omits: {missing:?}");
}

#[test]
fn u3_the_transcript_reader_splits_steps_heredocs_and_matches_placeholders() {
    let steps = steps(&["$ cat > a.json <<'EOF'", "{}", "EOF", "$ echo hi", "hi"]);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[0].command, "cat > a.json <<'EOF'\n{}\nEOF");
    assert!(steps[0].expected.is_empty());
    assert_eq!(steps[1].expected, ["hi"]);
    assert!(matches(
        "stale (fetched 0 s ago); x",
        "stale (fetched 12 s ago); x"
    ));
    assert!(matches("a [..] c", "a b b c"));
    assert!(!matches("a [..] c", "a b b d"));
    assert!(!matches("exit 5", "exit 2"));
}
