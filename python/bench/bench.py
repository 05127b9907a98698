"""Benchmarks of the Python package: what a Python host pays for a hit, and a cold sweep.

1. Warm hits of a 4 KiB file against Python's own floor (T4, T5): `open(p, "rb").read()` and
   `hashlib.sha256(...).hexdigest()` of the same file, measured in the same process and the same
   event loop, in interleaved sweeps (the median of each row). The rows and their targets:
   `await skill.read(...)` then `.bytes` from the memory tier (≤ 0.5× the floor), re-hashed from
   disk under `Rehash` (`memory_tier=0`, ≤ 1.5×), checked against the stored copy's evidence
   under `Guaranteed` (`memory_tier=0`, ≤ 1.2×), and a warm `await cache.load(...)` of an approved
   skill (≤ 3×). Beside them: the same calls through the Rust API (`python/examples/warm_read.rs`,
   on a current-thread runtime) and the bare cost of awaiting one of the extension's futures that
   does no work (`_skillcache._ready()`: the hop to skillcache's runtime and back, which a hit no
   longer takes).
2. A cold sweep of the corpus (tests/data/corpus/skills, or SKILLCACHE_CORPUS) from the official
   TS server over Streamable HTTP, as whole processes timed by the wall clock: this package
   (`list`, then `load_all` of every skill on a fresh root) beside the official TS SDK's
   `SkillsClient` (`interop/ts-sweep.mjs`), as `scripts/ts-compare.sh` does for the Rust client.

    python python/bench/bench.py [--runs N] [--reads N] [--sweeps N] [--warm-only]

Build the extension and the Rust side in release first (`maturin build --release -m
python/Cargo.toml` and install the wheel, or `cd python && maturin develop --release`;
`cargo build --release -p skillcache-python --example warm_read`), or the numbers are a debug
build's. Needs node and npm for part 2 (installs interop/ with `npm ci` if missing).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
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
# The clone's own copy of the corpus, as scripts/ts-compare.sh uses: a clone has nothing beside it.
CORPUS = Path(os.environ.get("SKILLCACHE_CORPUS", REPO / "tests" / "data" / "corpus" / "skills"))
SKILL_MD = b"---\nname: bench-notes\ndescription: A skill with one 4 KiB file to read warm.\n---\nRead data/4k.bin.\n"


def write_bench_skill(root: Path) -> Path:
    skill = root / "skills" / "bench-notes"
    (skill / "data").mkdir(parents=True)
    (skill / "SKILL.md").write_bytes(SKILL_MD)
    (skill / "data" / "4k.bin").write_bytes(os.urandom(4096))
    return root / "skills"


# The T4 targets: each row's ratio to the floor.
TARGETS = {"memory": 0.5, "rehash": 1.5, "guaranteed": 1.2, "load": 3.0}
READ = "data/4k.bin"


async def open_warm(
    skills: Path, scratch: Path, **options: object
) -> tuple[skillcache.SkillCache, skillcache.SkillEntry, skillcache.LoadedSkill]:
    """A cache over `skillcache serve`, its skill approved and loaded, the 4 KiB file fetched,
    then both read back from the store (the first stored read of a fetched file may take the full
    path, while its publication settles): every call after this is warm."""
    cache = skillcache.SkillCache(root=scratch / "root", key_file=scratch / "host.key", **options)
    binary = REPO / "target" / "release" / "skillcache"
    if not binary.is_file():
        binary = REPO / "target" / "debug" / "skillcache"
    # `serve` takes only its own options (it keeps no cache of its own).
    cache.connect_stdio("bench", [str(binary), "serve", str(skills)])
    entry = (await cache.entry("bench", "skill://bench-notes/SKILL.md")).entry
    await cache.approve("bench", entry)
    skill = await cache.load("bench", entry)
    await skill.read(READ)
    for _ in range(3):
        await cache.load("bench", entry)
        await skill.read(READ)
    return cache, entry, skill


def per_call(n: int, start: float) -> float:
    return (time.perf_counter() - start) / n * 1e6


async def python_rows(skills: Path, scratch: Path, reads: int, sweeps: int) -> dict[str, float]:
    """µs per call of the floor and of each row, in one event loop: the median of `sweeps`
    interleaved sweeps, so a slow moment of the machine hits every row alike."""
    data = skills / "bench-notes" / READ
    memory = await open_warm(skills, scratch / "memory")
    rehash = await open_warm(skills, scratch / "rehash", memory_tier=0)
    guaranteed = await open_warm(skills, scratch / "guaranteed", memory_tier=0,
                                 isolation="guaranteed")
    cache, entry, _ = memory

    async def floor() -> float:
        start = time.perf_counter()
        for _ in range(reads):
            with open(data, "rb") as f:
                hashlib.sha256(f.read()).hexdigest()
        return per_call(reads, start)

    async def read(skill: skillcache.LoadedSkill) -> float:
        start = time.perf_counter()
        for _ in range(reads):
            (await skill.read(READ)).bytes
        return per_call(reads, start)

    async def load() -> float:
        start = time.perf_counter()
        for _ in range(reads):
            await cache.load("bench", entry)
        return per_call(reads, start)

    async def bare() -> float:
        start = time.perf_counter()
        for _ in range(reads):
            await _skillcache._ready()
        return per_call(reads, start)

    rows: dict[str, list[float]] = {k: [] for k in ("floor", *TARGETS, "bare_await")}
    hops = {k: 0 for k in TARGETS}
    calls = {
        "memory": lambda: read(memory[2]),
        "rehash": lambda: read(rehash[2]),
        "guaranteed": lambda: read(guaranteed[2]),
        "load": load,
    }
    for _ in range(sweeps):
        rows["floor"].append(await floor())
        for key, call in calls.items():
            before = _skillcache._hops()
            rows[key].append(await call())
            hops[key] += _skillcache._hops() - before
        rows["bare_await"].append(await bare())
    # A warm call hops only after the index changed under it (a warm load asks the index again
    # once a hit's access time is written, at most once a minute): more than that, and the row
    # measured hops, not hits.
    for key, n in hops.items():
        print(f"{key}: {n} of {reads * sweeps} calls went to the runtime")
        if n > reads * sweeps // 1000:
            sys.exit(f"{key}: warm calls went to the runtime: the row measured hops, not hits")
    return {k: statistics.median(v) for k, v in rows.items()}


def rust_warm_read(skills: Path, scratch: Path, reads: int) -> dict[str, float]:
    binary = REPO / "target" / "release" / "examples" / "warm_read"
    if not binary.is_file():
        sys.exit(f"{binary} is missing: cargo build --release -p skillcache-python --example warm_read")
    out = subprocess.run([str(binary), str(skills), str(scratch), str(reads)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


LABELS = {
    "floor": "the floor: `open(p, \"rb\").read()` + `hashlib.sha256(…).hexdigest()`",
    "memory": "`await skill.read(…)`, memory tier",
    "rehash": "`await skill.read(…)`, `Rehash`, disk (`memory_tier=0`)",
    "guaranteed": "`await skill.read(…)`, `Guaranteed`, disk (`memory_tier=0`)",
    "load": "warm `await cache.load(…)` of an approved skill",
    "bare_await": "awaiting a runtime future that does nothing (`_ready()`)",
}


def warm(reads: int, sweeps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        skills = write_bench_skill(tmp_path)
        rust = rust_warm_read(skills, tmp_path / "rust", reads)
        py = asyncio.run(python_rows(skills, tmp_path / "py", reads, sweeps))
        make_writable(tmp_path)
    floor = py["floor"]
    print(f"\nwarm 4 KiB hits from Python, one process and one event loop, {reads} calls a "
          f"sweep, median of {sweeps} sweeps (µs per call)\n")
    print("| call | Python | / floor | target | Rust API |")
    print("|---|---|---|---|---|")
    for key, label in LABELS.items():
        ratio = f"{py[key] / floor:.2f}×" if key != "bare_await" else ""
        target = TARGETS.get(key)
        verdict = "" if target is None else (
            f"≤ {target}×: **{'met' if py[key] / floor <= target else 'not met'}**")
        rs = f"{rust[key]:.2f}" if key in rust else ""
        print(f"| {label} | {py[key]:.2f} | {ratio} | {verdict} | {rs} |")


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
        ["node", str(interop / "ts-http-server.mjs"), str(CORPUS), "0"],
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
    parser.add_argument("--sweeps", type=int, default=5)
    parser.add_argument("--sweep-once", nargs=2, metavar=("URL", "ROOT"))
    parser.add_argument("--warm-only", action="store_true")
    args = parser.parse_args()
    if args.sweep_once:
        print(asyncio.run(python_sweep(args.sweep_once[0], Path(args.sweep_once[1]))))
        return
    warm(args.reads, args.sweeps)
    if not args.warm_only:
        sweep(args.runs)


if __name__ == "__main__":
    main()
