//! The `skillcache` binary this crate builds answers as a command line does: `--version` and
//! `--help` on stdout with exit 0, a usage error on stderr with exit 2, and `run` gives the
//! library's callers the same codes.
//!
//! The command's behaviour is tested at length by the root's suite (tests/cli*.rs and others),
//! which runs this binary; this test is also what makes a plain `cargo test` build it.

use std::process::{Command, Output};

fn skillcache(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skillcache"))
        .args(args)
        .output()
        .expect("run skillcache")
}

#[test]
fn version_names_the_command_and_its_version_and_exits_0() {
    let out = skillcache(&["--version"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("skillcache {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_lists_the_commands_and_exits_0() {
    let out = skillcache(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["load", "lock", "serve", "demo"] {
        assert!(
            help.contains(command),
            "`{command}` missing from --help:\n{help}"
        );
    }
}

#[test]
fn an_unknown_command_is_a_usage_error_exit_2() {
    let out = skillcache(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-such-command"),
        "{out:?}"
    );
}

#[test]
fn run_returns_the_exit_code_instead_of_exiting() {
    assert_eq!(skillcache_cli::run(["skillcache", "no-such-command"]), 2);
}
