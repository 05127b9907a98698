#!/usr/bin/env python3
"""Whole-process time of a warm `skillcache load`, with and without the server having to start.

Each scenario runs the CLI as a host would (a new process per load) against `skillcache serve`
over a small skill and prints the median and 90th percentile of RUNS runs as README table rows:

- fresh:   the entry is fresh in the index (`serve --ttl-ms 3600000`): the server is never
           started (R-B4); the process opens the cache, reads the entry, re-hashes SKILL.md.
- no server: the same, with `--stdio /nonexistent/server`: proof that nothing was started.
- stale:   the entry is stale (`serve --ttl-ms 0`): the process starts the server, runs
           `initialize` and `skills/get`, and reads the bytes from the cache.
- cold:    a fresh cache root every run: start, list nothing, `skills/get`, `resources/read`,
           verify, publish.

Usage: python3 scripts/load-latency.py [--bin PATH] [--runs N]
(default binary: target/release/skillcache if built, else target/debug/skillcache)
"""
import argparse
import os
import pathlib
import shlex
import statistics
import subprocess
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
URI = "skill://notes/SKILL.md"


def default_bin():
    for profile in ("release", "debug"):
        path = REPO / "target" / profile / "skillcache"
        if path.exists():
            return path
    raise SystemExit("build the CLI first: cargo build --release --bin skillcache")


def make_skill(root):
    skill = root / "served" / "notes"
    (skill / "refs").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: notes\ndescription: Takes notes.\n---\n# Notes\nSee refs/notes.md.\n"
    )
    (skill / "refs" / "notes.md").write_text("the notes\n" * 100)
    return root / "served"


def run(cmd):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"{shlex.join(map(str, cmd))} failed: {out.stderr.decode()}")
    return elapsed


def measure(name, make_cmd, runs, prime=None):
    if prime:
        run(prime)
    times = sorted(run(make_cmd(i)) for i in range(runs))
    median = statistics.median(times) * 1000
    p90 = times[int(0.9 * (len(times) - 1))] * 1000
    return name, median, p90


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", type=pathlib.Path, default=None)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    binary = args.bin or default_bin()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        served = make_skill(tmp)

        def serve(ttl):
            return f"{shlex.quote(str(binary))} serve --ttl-ms {ttl} {shlex.quote(str(served))}"

        def load(root, stdio):
            return [binary, "load", "--root", root, URI, "--origin", "bench", "--stdio", stdio]

        rows = [
            measure("warm, fresh entry (server never started)",
                    lambda _: load(tmp / "fresh", serve(3_600_000)), args.runs,
                    prime=load(tmp / "fresh", serve(3_600_000))),
            measure("warm, fresh entry, `--stdio /nonexistent/server`",
                    lambda _: load(tmp / "fresh", "/nonexistent/server"), args.runs),
            measure("warm, stale entry (server started: initialize + skills/get)",
                    lambda _: load(tmp / "stale", serve(0)), args.runs,
                    prime=load(tmp / "stale", serve(0))),
            measure("cold (new root: server started, get, read, verify, publish)",
                    lambda i: load(tmp / f"cold-{i}", serve(0)), args.runs),
        ]
    print(f"binary: {binary} ({os.cpu_count()} cpus), {args.runs} runs each")
    print("| `skillcache load`, whole process | median | p90 |")
    print("|---|---|---|")
    for name, median, p90 in rows:
        print(f"| {name} | {median:.1f} ms | {p90:.1f} ms |")


if __name__ == "__main__":
    main()
