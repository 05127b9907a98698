#!/usr/bin/env python3
"""Prints the performance tables of docs/performance.md from the last `cargo bench` run.

Reads criterion's median estimates (target/criterion/<group>/<bench>/<input>/new/estimates.json)
and prints medians and the ratios the targets are stated in, each ratio from one run.
Usage: cargo bench && python3 scripts/bench-table.py
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def median(group, bench, inp=None):
    path = ROOT / group / bench / (inp or "") / "new" / "estimates.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["median"]["point_estimate"]  # nanoseconds


def fmt(ns):
    if ns is None:
        return "—"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}×"


def main():
    if not ROOT.exists():
        sys.exit("no criterion results: run `cargo bench` first")
    sizes = ["1KiB", "4KiB", "64KiB", "1MiB", "16MiB"]
    print("hashing (our digest path vs raw sha2, in memory)\n")
    print("| size | raw sha2 | skillcache | ratio |")
    print("|---|---|---|---|")
    for s in sizes:
        raw, ours = median("hashing", "raw_sha2", s), median("hashing", "skillcache_digest", s)
        print(f"| {s} | {fmt(raw)} | {fmt(ours)} | {ratio(ours, raw)} |")

    print("\ncache_hit, public API (what a host calls: LoadedSkill::read; entry + load)\n")
    print("| size | floor: open+read+sha2 | memory tier | Rehash | Guaranteed | warm load | Rehash / floor | Guaranteed / floor | load / floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in sizes:
        m = {b: median("cache_hit", b, s) for b in ["floor_open_read_sha2", "public_read_memory", "public_read_rehash", "public_read_guaranteed", "public_load_fresh"]}
        fl = m["floor_open_read_sha2"]
        print(
            f"| {s} | {fmt(fl)} | {fmt(m['public_read_memory'])} | {fmt(m['public_read_rehash'])} | "
            f"{fmt(m['public_read_guaranteed'])} | {fmt(m['public_load_fresh'])} | {ratio(m['public_read_rehash'], fl)} | "
            f"{ratio(m['public_read_guaranteed'], fl)} | {ratio(m['public_load_fresh'], fl)} |"
        )

    print("\ncache_hit, internal layer (the sync core, core_*) beside cacache\n")
    print("| size | floor: open+read+sha2 | hash only | rehash | guaranteed | cacache by digest | cacache by key | rehash / floor | rehash / hash only | cacache key / rehash | rehash / guaranteed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in sizes:
        m = {b: median("cache_hit", b, s) for b in ["floor_open_read_sha2", "hash_only_sha2", "core_rehash", "core_guaranteed", "cacache_by_digest", "cacache_by_key"]}
        print(
            f"| {s} | {fmt(m['floor_open_read_sha2'])} | {fmt(m['hash_only_sha2'])} | {fmt(m['core_rehash'])} | "
            f"{fmt(m['core_guaranteed'])} | {fmt(m['cacache_by_digest'])} | {fmt(m['cacache_by_key'])} | "
            f"{ratio(m['core_rehash'], m['floor_open_read_sha2'])} | {ratio(m['core_rehash'], m['hash_only_sha2'])} | "
            f"{ratio(m['cacache_by_key'], m['core_rehash'])} | {ratio(m['core_rehash'], m['core_guaranteed'])} |"
        )

    print("\nmemory tier (a hit answered from memory, beside the disk floor)\n")
    print("| size | floor: open+read+sha2 | rehash (disk) | memory hit | floor / memory |")
    print("|---|---|---|---|---|")
    for s in sizes:
        floor = median("cache_hit", "floor_open_read_sha2", s)
        disk = median("cache_hit", "core_rehash", s)
        mem = median("cache_hit", "core_memory", s)
        if mem is not None:
            print(f"| {s} | {fmt(floor)} | {fmt(disk)} | {fmt(mem)} | {ratio(floor, mem)} |")

    print("\ncold load (a whole skill into a fresh root: load + every file, in-process source)\n")
    print("| skill | per file (`read` each: round 1's path) | `load_all` (one batch) | batch / per file |")
    print("|---|---|---|---|")
    for skill in ["cap_512x32KiB", "median_iterate-pr"]:
        per = median("skill_load", f"{skill}_cold_per_file")
        bat = median("skill_load", f"{skill}_cold_load_all")
        print(f"| {skill} | {fmt(per)} | {fmt(bat)} | {ratio(bat, per)} |")

    print("\nzero-copy (16 MiB hit; `Guaranteed` above the crossover is a read-only map)\n")
    print("| 16 MiB | hash only | floor: open+read+sha2 | rehash | rehash / hash only | guaranteed | memory tier |")
    print("|---|---|---|---|---|---|---|")
    m = {b: median("cache_hit", b, "16MiB") for b in ["hash_only_sha2", "floor_open_read_sha2", "core_rehash", "core_guaranteed", "core_memory"]}
    print(f"| median | {fmt(m['hash_only_sha2'])} | {fmt(m['floor_open_read_sha2'])} | {fmt(m['core_rehash'])} | "
          f"{ratio(m['core_rehash'], m['hash_only_sha2'])} | {fmt(m['core_guaranteed'])} | {fmt(m['core_memory'])} |")

    print("\nmap crossover (raw floor: open+fstat+read vs open+fstat+mmap+fstat)\n")
    print("| size | copy | map | copy + read every byte | map + read every byte | map/copy, consumed |")
    print("|---|---|---|---|---|---|")
    for s_ in ["256KiB", "1MiB", "2MiB", "4MiB", "16MiB"]:
        m = {b: median("map_crossover", b, s_) for b in ["copy_hit", "map_hit", "copy_consume", "map_consume"]}
        if m["copy_hit"] is not None:
            print(f"| {s_} | {fmt(m['copy_hit'])} | {fmt(m['map_hit'])} | {fmt(m['copy_consume'])} | {fmt(m['map_consume'])} | {ratio(m['map_consume'], m['copy_consume'])} |")

    print("\nwhole-host warm start (new SkillCache, SKILL.md of every valid corpus skill, no server)\n")
    print("| memory tier | total | ")
    print("|---|---|")
    for t in ["tier_on", "tier_off"]:
        print(f"| {t} | {fmt(median('warm_start', f'corpus_skill_md_{t}'))} |")

    print("\nskill_load (a whole skill: load + every file)\n")
    print("| skill | cold (fetch, verify, publish) | warm, file by file | warm, read_all (parallel) | parallel / file by file |")
    print("|---|---|---|---|---|")
    for skill in ["cap_512x32KiB", "median_iterate-pr"]:
        cold = median("skill_load", f"{skill}_cold_load_all")
        seq = median("skill_load", f"{skill}_warm_file_by_file")
        par = median("skill_load", f"{skill}_warm_read_all_parallel")
        print(f"| {skill} | {fmt(cold)} | {fmt(seq)} | {fmt(par)} | {ratio(par, seq)} |")

    print("\nindex (entry lookup by origin, URI, principal)\n")
    print("| entries | lookup | vs 100 |")
    print("|---|---|---|")
    base = median("index", "entry_lookup", "100")
    for n in ["100", "10000", "100000"]:
        v = median("index", "entry_lookup", n)
        print(f"| {n} | {fmt(v)} | {ratio(v, base)} |")


if __name__ == "__main__":
    main()
