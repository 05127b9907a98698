//! The `skillcache` command: [`skillcache_cli::run`] with the process's own arguments. Its exit
//! codes are the contract that function's crate documents.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(skillcache_cli::run(std::env::args_os()))
}
