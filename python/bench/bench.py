"""Benchmarks of the Python package (issue 22): what Python costs over the Rust API.

1. A warm verified 4 KiB read, `await skill.read(...)` then `.bytes`, from Python, beside the same
   read through the Rust API (`python/examples/warm_read.rs`: `LoadedSkill::read` on a
   current-thread runtime) and beside the bare cost of awaiting one of the extension's futures
   that does no work (`_skillcache._ready()`): the target is Python ≤ 3 × Rust + that overhead.
   Both with the memory tier (the hit a host gets after its first read) and without it
   (re-hashed from disk on every read).
2. A cold sweep of the corpus (../shared/corpus/skills) from the official TS server over
   Streamable HTTP, as whole processes timed by the wall clock: this package (`list`, then
   `load_all` of every skill on a fresh root) beside the official TS SDK's `SkillsClient`
   (`interop/ts-sweep.mjs`), as `scripts/ts-compare.sh` does for the Rust client.

    python python/bench/bench.py [--runs N] [--reads N]

Build the extension and the Rust side in release first (`cd python && maturin develop --release`;
`cargo build --release -p skillcache-python --example warm_read`), or the numbers are a debug
build's. Needs node and npm for part 2 (installs interop/ with `npm ci` if missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import skillcache
from skillcache import _skillcache

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SKILLCACHE_SHARED", REPO.parent / "shared"))
SKILL_MD = b"---\nname: bench-notes\ndescription: A skill with one 4 KiB file to read warm.\n---\nRead data/4k.bin.\n"


def write_bench_skill(root: Path) -> Path:
    skill = root / "skills" / "bench-notes"
    (skill / "data").mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(SKILL_MD)
    (skill / "data" / "4k.bin").write_bytes(os.urandom(4096))
    return root / "skills"


async def python_warm_read(skills: Path, scratch: Path, reads: int, tier: int) -> float:
    """µs per warm verified read from Python."""
    cache = skillcache.SkillCache(
        root=scratch / "root", key_file=scratch / "host.key", approval="not_required",
        memory_tier=tier,
    )
    binary = REPO / "target" / "release" / "skillcache"
    if not binary.is_file():
        binary = REPO / "target" / "debug" / "skillcache"
    cache.connect_stdio("bench", [str(binary), "serve", str(skills), "--root", str(scratch / "srv"),
                                  "--key-file", str(scratch / "srv.key")])
    info = await cache.entry("bench", "skill://bench-notes/SKILL.md")
    skill = await cache.load("bench", info.entry)
    await skill.read("data/4k.bin")  # fetched and stored: the rest are warm
    start = time.perf_counter()
    for _ in range(reads):
        f = await skill.read("data/4k.bin")
        f.bytes
    return (time.perf_counter() - start) / reads * 1e6


async def bare_await(reads: int) -> float:
    """µs per await of an extension future that does nothing (the pyo3-asyncio round trip)."""
    start = time.perf_counter()
    for _ in range(reads):
        await _skillcache._ready()
    return (time.perf_counter() - start) / reads * 1e6


def rust_warm_read(skills: Path, scratch: Path, reads: int) -> dict[str, float]:
    binary = REPO / "target" / "release" / "examples" / "warm_read"
    if not binary.is_file():
        sys.exit(f"{binary} is missing: cargo build --release -p skillcache-python --example warm_read")
    out = subprocess.run([str(binary), str(skills), str(scratch), str(reads)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def warm(reads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        skills = write_bench_skill(tmp_path)
        rust = rust_warm_read(skills, tmp_path / "rust", reads)
        overhead = asyncio.run(bare_await(reads))
        rows = []
        for label, tier in [("memory_tier", 64 << 20), ("rehash_from_disk", 0)]:
            py = asyncio.run(python_warm_read(skills, tmp_path / f"py-{label}", reads, tier))
            rows.append((label, py, rust[label]))
        make_writable(tmp_path)
    print(f"\nwarm verified 4 KiB read, {reads} reads each (µs per read)\n")
    print("| path | Python | Rust | bare await | Python / (3 × Rust + bare await) |")
    print("|---|---|---|---|---|")
    for label, py, rs in rows:
        print(f"| {label} | {py:.1f} | {rs:.1f} | {overhead:.1f} | {py / (3 * rs + overhead):.2f} |")


def make_writable(path: Path) -> None:
    # Cache roots are read-only by design; a temporary one is made writable to be removed.
    for p in [path, *path.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o700)


async def python_sweep(url: str, root: Path) -> str:
    start = time.perf_counter()
    cache = skillcache.SkillCache(root=root / "root", key_file=root / "host.key",
                                  approval="not_required")
    cache.connect_http("ts-server", url)
    skills = files = size = 0
    for item in await cache.list("ts-server"):
        if isinstance(item, skillcache.Error):
            continue  # refused entries are left out, as the TS client's skipInvalid does
        _, loaded = await cache.load_all("ts-server", item.entry)
        for f in loaded:
            assert f.verified
            files += 1
            size += len(f.bytes)
        skills += 1
    ms = (time.perf_counter() - start) * 1e3
    return f"skills={skills} files={files} bytes={size} ms={ms:.1f}"


def timed(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(argv, check=True, capture_output=True, text=True)
    return (time.perf_counter() - start) * 1e3, out.stdout.strip().splitlines()[-1]


def sweep(runs: int) -> None:
    interop = REPO / "interop"
    if not (interop / "node_modules" / "@modelcontextprotocol" / "client").is_dir():
        subprocess.run(["npm", "ci", "--silent"], cwd=interop, check=True)
    server = subprocess.Popen(
        ["node", str(interop / "ts-http-server.mjs"), str(SHARED / "corpus" / "skills"), "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert server.stdout is not None
        url = re.search(r"listening (\S+)", server.stdout.readline()).group(1)
        rows: dict[str, list[float]] = {"ts_client": [], "python_cold": []}
        for i in range(runs):
            wall, line = timed(["node", str(interop / "ts-sweep.mjs"), url])
            rows["ts_client"].append(wall)
            print(f"ts_client   wall={wall:.0f} ms  {line}")
            root = Path(tempfile.mkdtemp())
            wall, line = timed([sys.executable, __file__, "--sweep-once", url, str(root)])
            rows["python_cold"].append(wall)
            print(f"python_cold wall={wall:.0f} ms  {line}")
            make_writable(root)
            shutil.rmtree(root)
    finally:
        server.kill()
    ts = statistics.median(rows["ts_client"])
    print(f"\ncold sweep of the corpus from the TS server over HTTP, {runs} runs (whole process)\n")
    print("| client | wall, median | / TS client |")
    print("|---|---|---|")
    for label, walls in rows.items():
        m = statistics.median(walls)
        print(f"| {label} | {m:.0f} ms | {m / ts:.2f}× |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--sweep-once", nargs=2, metavar=("URL", "ROOT"))
    parser.add_argument("--warm-only", action="store_true")
    args = parser.parse_args()
    if args.sweep_once:
        print(asyncio.run(python_sweep(args.sweep_once[0], Path(args.sweep_once[1]))))
        return
    warm(args.reads)
    if not args.warm_only:
        sweep(args.runs)


if __name__ == "__main__":
    main()
