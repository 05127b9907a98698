#!/usr/bin/env python3
"""Builds the parser fuzz targets' seeds from the real skill corpus (issue 9).

Usage: scripts/fuzz-seeds.py [CORPUS]   (default: tests/data/corpus/skills)

For every folder under CORPUS that holds a SKILL.md:
- fuzz/seeds/frontmatter/: the SKILL.md (its first MAX_SEED bytes) and its frontmatter block
  alone (the target also wraps inputs in `---` fences);
- fuzz/seeds/entry_json/: the entry `skillcache inspect DIR` prints (folders it refuses
  are skipped and counted);
- fuzz/seeds/uri_resolve/: `skill-uri\\nreference` for every file the entry lists, once with the
  absolute file URI and once with the path relative to the skill root;
- fuzz/seeds/digest/: every listed digest.

Seeds are named by the SHA-1 of their bytes, as libFuzzer names corpus files, so re-running the
script is idempotent and duplicates collapse. Each target's folder is rebuilt from scratch.
Python 3.11 standard library only.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "fuzz" / "seeds"
TARGETS = ("frontmatter", "entry_json", "uri_resolve", "digest")
# A fuzz input longer than this mostly costs time: libFuzzer mutates the first bytes anyway.
MAX_SEED = 8192
# Every target's seeds together stay well under this (checked at the end).
MAX_TOTAL = 5 * 1024 * 1024


def write_seed(target: str, data: bytes) -> None:
    data = data[:MAX_SEED]
    (SEEDS / target / hashlib.sha1(data).hexdigest()).write_bytes(data)


def frontmatter_block(md: bytes) -> bytes | None:
    """The YAML between the opening and closing `---` lines, if the file has them."""
    lines = md.split(b"\n")
    if not lines or lines[0].strip() != b"---":
        return None
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == b"---":
            return b"\n".join(lines[1:i])
    return None


def inspect(folder: Path) -> dict | None:
    """The entry the CLI builds for `folder`, or None if it refuses the folder."""
    run = subprocess.run(
        ["cargo", "run", "-q", "--", "inspect", str(folder)],
        cwd=REPO,
        capture_output=True,
    )
    if run.returncode != 0:
        return None
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:
        return None


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "data" / "corpus" / "skills"
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 1
    for target in TARGETS:
        shutil.rmtree(SEEDS / target, ignore_errors=True)
        (SEEDS / target).mkdir(parents=True)
    # Build the CLI once, so the per-folder runs below only run it.
    subprocess.run(["cargo", "build", "-q"], cwd=REPO, check=True)

    folders = sorted(p.parent for p in corpus.rglob("SKILL.md") if p.is_file())
    refused = []
    for folder in folders:
        md = (folder / "SKILL.md").read_bytes()
        write_seed("frontmatter", md)
        block = frontmatter_block(md)
        if block is not None:
            write_seed("frontmatter", block)
        entry = inspect(folder)
        if entry is None:
            refused.append(folder.relative_to(corpus))
            continue
        write_seed("entry_json", json.dumps(entry, indent=2, sort_keys=True).encode())
        skill_uri = entry["uri"]
        skill_root = skill_uri.rsplit("/", 1)[0] + "/"
        for res in entry.get("resources", []):
            uri = res["uri"]
            write_seed("uri_resolve", f"{skill_uri}\n{uri}".encode())
            if uri.startswith(skill_root):
                write_seed("uri_resolve", f"{skill_uri}\n{uri[len(skill_root):]}".encode())
            write_seed("digest", res["digest"].encode())

    total = 0
    for target in TARGETS:
        files = list((SEEDS / target).iterdir())
        size = sum(f.stat().st_size for f in files)
        total += size
        print(f"{target}: {len(files)} seeds, {size} bytes")
    print(f"{len(folders)} skill folders, {len(refused)} refused by inspect: "
          + ", ".join(str(r) for r in refused))
    print(f"total {total} bytes")
    if total > MAX_TOTAL:
        print(f"seeds exceed {MAX_TOTAL} bytes: lower MAX_SEED", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
