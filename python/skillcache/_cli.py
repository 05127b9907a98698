"""The `skillcache` command that `pip install` puts on PATH (`[project.scripts]`): the Rust
binary's command line — the same code, `skillcache_cli::run`, compiled into the extension — run
in this process, with the binary's output and exit codes."""

import signal
import sys

from ._skillcache import run_cli


def main() -> None:
    # As for the binary, Ctrl-C ends the command at once. Python's own handler would only set a
    # flag for the interpreter to see when the command returns, which `serve` never does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(run_cli(sys.argv))


if __name__ == "__main__":
    main()
