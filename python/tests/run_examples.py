"""Runs the Python examples of the docs verbatim (N7): every ```python block of README.md and
python/README.md, each as its own process of this interpreter, from the clone's root, with only
this interpreter's folder on PATH — so the `skillcache` the examples start is the console script
that installing the package put beside it — and a scratch HOME, XDG folders and TMPDIR.

    python python/tests/run_examples.py [DOC ...]

Nothing but the standard library: `.ci/run` runs it with a fresh virtualenv holding only the
installed package (no pytest, no dev tools, nothing of the clone's build on PATH), and
`test_api.py` runs it with the test environment's interpreter. The blocks are read from the
markdown files at run time, so the docs and what is run cannot drift. Exit 0 when every block
exited 0; otherwise each failure is printed with its block and output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "python/README.md"]


def python_blocks(markdown: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown.read_text(encoding="utf-8"), re.S)


def scratch_env(scratch: Path) -> dict[str, str]:
    # The interpreter's own folder, not its resolved target: a virtualenv's `bin`.
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLCACHE_")}
    env.update(
        PATH=str(bin_dir),
        HOME=str(scratch),
        XDG_CACHE_HOME=str(scratch / "cache"),
        XDG_CONFIG_HOME=str(scratch / "config"),
        # The examples' `tempfile.mkdtemp()` folders land here, and are removed with it.
        TMPDIR=str(scratch),
    )
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    return env


def remove(scratch: Path) -> None:
    # Cache roots are read-only by design: made writable to be removed (as a normal user too).
    for p in [scratch, *scratch.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o700)
    shutil.rmtree(scratch)


def run(doc: str) -> list[str]:
    """The failures of `doc`'s blocks, each a message; empty when every block ran."""
    blocks = python_blocks(REPO / doc)
    if not blocks:
        return [f"{doc} has no python example"]
    failures = []
    for n, block in enumerate(blocks, 1):
        scratch = Path(tempfile.mkdtemp(prefix="examples-"))
        try:
            out = subprocess.run(
                [sys.executable, "-c", block],
                cwd=REPO,
                env=scratch_env(scratch),
                capture_output=True,
                text=True,
                timeout=180,
            )
            # The examples empty their cache roots (read-only by design) with a purge and
            # remove their temporary folders: a host copying one leaves nothing behind.
            left = sorted(p.name for p in scratch.iterdir())
        finally:
            remove(scratch)
        if out.returncode == 0 and left:
            failures.append(f"{doc}, block {n} left {left} in its temporary folder:\n{block}")
        elif out.returncode != 0:
            failures.append(
                f"{doc}, block {n} exited {out.returncode}:\n{block}\n--- stdout\n{out.stdout}"
                f"\n--- stderr\n{out.stderr}"
            )
        else:
            print(f"ok: {doc}, block {n} ({len(block.splitlines())} lines)")
    return failures


def main() -> None:
    failures = [f for doc in (sys.argv[1:] or DOCS) for f in run(doc)]
    for f in failures:
        print(f, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
