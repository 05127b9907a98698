#!/usr/bin/env python3
"""The public surface of the skillcache library, counted from rustdoc's JSON (issue 11).

Builds the JSON with the default features and `serve` (what a host gets from crates.io, with the
embeddable server the command line uses; the `internals` feature is for the crate's own tests)
and prints the public modules and the number of public items by kind. It fails (exit 1) when the surface breaks what is sealed:

- at most 6 public modules besides the crate root;
- no public path runs through `store` or `index`;
- the host-API tests (tests/host_api.rs) use nothing the `internals` feature adds.

It also counts public items (modules, structs, enums, functions, methods, constants, fields,
traits, type aliases; re-exports and impl blocks are not items of their own) against issue 11's
bound of 220 and says plainly whether the bound is met. With `--strict`, an item count over the
bound fails too. The bound is issue 11's 220 plus the items later issues asked for by name
(`GRANTED` below): a new public item needs its line there, with the issue that wanted it.

Usage: scripts/api-surface.py [--no-build] [--strict]
"""

import collections
import json
import os
import re
import shlex
import subprocess
import sys

MAX_MODULES = 6
# Public items the issues after issue 11 asked for, each by name (16 in round 3, 9 in round 4).
GRANTED = [
    ("issue 18, E5", "display_safe"),
    ("issue 18, E8", "SkillServer::lenient"),
    ("issue 21, Q1", "Catalog"),
    ("issue 21, Q1", "Catalog::skills"),
    ("issue 21, Q1", "Catalog::get"),
    ("issue 21, Q1", "Catalog::failures"),
    ("issue 21, Q1", "CatalogSkill"),
    ("issue 21, Q1", "CatalogSkill::handle"),
    ("issue 21, Q1", "CatalogSkill::origin"),
    ("issue 21, Q1", "CatalogSkill::entry"),
    ("issue 21, Q1", "CatalogSkill::collides_with"),
    ("issue 21, Q1", "SkillCache::catalog"),
    ("issue 21, Q2", "SkillFile::framed"),
    ("issue 21, Q3", "SkillCache::origins"),
    ("issue 21, Q3", "SkillCache::purge_absent"),
    ("issue 21, Q4", "SkillCacheBuilder::origin_quota"),
    # Round 4: a host that bounds how many servers it starts at once gathers the listings
    # itself and builds the catalog from them (K4), as the CLI's `--jobs` does.
    ("issue 26, K4", "CATALOG_LISTINGS_AT_ONCE"),
    ("issue 26, K4", "Listing"),
    ("issue 26, K4", "Catalog::from_listings"),
    # A binding's source over the host's own connection (Python's connect_session, Node's
    # connectClient, J1) checks answers against the bound the Rust sources use.
    ("issue 29, J1", "message_bound"),
    # ...and maps the three calls onto one raw request in one place, not once per binding.
    ("issue 29, J1", "Requests"),
    # ...and holds the change callback such a source reports to (R-B5) in one place too.
    ("issue 29, J1", "ChangeSink"),
    ("issue 29, J1", "ChangeSink::set"),
    ("issue 29, J1", "ChangeSink::notify"),
    # A binding that keeps a file's bytes rather than its `SkillFile` (Node's SkillFile made in
    # JS, J3) frames them through the library, which checks them against the entry again first.
    ("issue 29, J3", "LoadedSkill::frame_kept"),
    # A lock CI can gate on (L1): every pinned origin asked for its listing, every difference
    # from the lock named with its data (origin, skill, file, pinned and listed digest and size).
    ("issue 42, L1", "SkillCache::check_lock"),
    ("issue 42, L1", "LockCheck"),
    ("issue 42, L1", "LockCheck::is_clean"),
    # ...and its pure half, for a host that gathers the listings itself (as `Catalog`'s).
    ("issue 42, L1", "LockCheck::from_listings"),
    ("issue 42, L1", "Listed"),
    ("issue 42, L1", "LockCheck::pinned"),
    ("issue 42, L1", "LockCheck::matched"),
    ("issue 42, L1", "LockCheck::drift"),
    ("issue 42, L1", "LockCheck::dynamic"),
    ("issue 42, L1", "LockDrift"),
    ("issue 42, L1", "LockDrift::origin"),
    ("issue 42, L1", "LockDrift::skill"),
    ("issue 42, L1", "LockDrift::kind"),
    ("issue 42, L1", "LockDrift::files"),
    ("issue 42, L1", "FileDrift"),
    ("issue 42, L1", "FileDrift::uri"),
    ("issue 42, L1", "FileDrift::pinned"),
    ("issue 42, L1", "FileDrift::now"),
    # A Rust host that already listed a server with rmcp hands its `Skill` values over without
    # listing again; they are validated by our rules from their JSON (P6).
    ("issue 41, P6", "SkillEntry::from_rmcp"),
    # One binding layer (issue 39, B5): the stderr target of a stdio server the host names by
    # descriptor lives in the platform layer, not once per binding...
    ("issue 39, B5", "stderr_to_descriptor"),
    # ...and so is the duplicate of the host's own stderr a server inherits (Node marks its
    # descriptor 2 close-on-exec, B7).
    ("issue 39, B7", "stderr_duplicate"),
    # ...and a binding given one of the two limits takes the other's default from the library,
    # not from a copy of the baseline.
    ("issue 39, B5", "Limits::max_files"),
    ("issue 39, B5", "Limits::max_total_bytes"),
    # A binding whose host forks (Python's os.fork) closes the index's fork gate around the fork,
    # so no thread is inside SQLite when the child is made (B4).
    ("issue 39, B4", "SkillCache::before_fork"),
    ("issue 39, B4", "SkillCache::after_fork"),
    # `lock --all` (and a host's own refresh of a lock) drops the pins of skills a server no
    # longer publishes.
    ("issue 42, L1", "LockFile::remove"),
    # A URI or reference longer than this is refused wherever it comes from, a host's, a
    # server's or a model's (issue 39's sixteenth review: a 100 MB URI was sent and stored).
    ("issue 39, B1", "MAX_URI_BYTES"),
    # One rule for a Streamable HTTP server's URL, for the CLI's `--url`, a config file and the
    # bindings' `connect_http` alike (issue 40, U2: `notaurl` was taken until first use).
    ("issue 40, U2", "http_url_problem"),
    # Write-behind: a load returns before its files are durable; a host that wants them in the
    # store waits for them, and a binding whose host exits without dropping its caches waits
    # for every cache at once (issue 41, P1).
    ("issue 41, P1", "SkillCache::flush"),
    ("issue 41, P1", "SkillCache::flush_all"),
    # `serve` answers reads from the bytes its scan hashed, within a bound a host embedding the
    # server (and the CLI's `--held-mib`) sets (issue 41, P3).
    ("issue 41, P3", "SkillServer::held_bytes"),
]
MAX_ITEMS = 220 + len(GRANTED)
COUNTED = {
    "module", "struct", "enum", "function", "constant", "static", "struct_field",
    "trait", "type_alias", "assoc_const", "assoc_type", "union", "macro",
}
# What only `internals` makes reachable: a host-API test that names one of these is not one.
INTERNAL_PATHS = re.compile(
    r"skillcache::(cache|core|host|store|index|digest|origin|server|frontmatter)\b|\.core\(\)"
)

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def build():
    # rustdoc's JSON is unstable: rustdoc alone is told it may use it (RUSTC_BOOTSTRAP=1 in a
    # wrapper cargo runs as RUSTDOC), never cargo. With the variable in cargo's environment,
    # proc-macro2's build script re-runs, and every proc macro and every crate deriving with one
    # is checked again (found in CI: about 3 minutes); this way the check artifacts of the
    # build before are reused.
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    os.makedirs(target, exist_ok=True)
    wrapper = os.path.join(target, "rustdoc-unstable.sh")
    rustdoc = os.environ.get("RUSTDOC", "rustdoc")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec {shlex.quote(rustdoc)} "$@"\n')
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, RUSTDOC=wrapper)
    env.pop("RUSTC_BOOTSTRAP", None)
    subprocess.run(
        ["cargo", "rustdoc", "-q", "-p", "skillcache", "--lib", "--features", "serve", "--",
         "-Z", "unstable-options", "--output-format", "json"],
        cwd=root, env=env, check=True,
    )


def main():
    if "--no-build" not in sys.argv:
        build()
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    doc = json.load(open(os.path.join(target, "doc", "skillcache.json")))
    kinds = collections.Counter()
    modules = []
    for item_id, item in doc["index"].items():
        if item["crate_id"] != 0 or item["visibility"] != "public":
            continue
        kind = next(iter(item["inner"]))
        if kind not in COUNTED:
            continue
        kinds[kind] += 1
        if kind == "module" and item_id != str(doc["root"]):
            modules.append(item["name"])
    # A path is public only if every module on it is: with `store` and `index` not public
    # modules, nothing can be named through them (their error types are re-exported by `error`).
    through = sorted(m for m in modules if m in ("store", "index"))
    total = sum(kinds.values())
    print(f"public modules ({len(modules)}, bound {MAX_MODULES}): {', '.join(sorted(modules))}")
    print(f"public items: {total} (bound {MAX_ITEMS})")
    for kind, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<13} {n}")
    failures = []
    if len(modules) > MAX_MODULES:
        failures.append(f"{len(modules)} public modules, bound {MAX_MODULES}")
    if total > MAX_ITEMS:
        print(f"NOT MET: {total} public items, bound {MAX_ITEMS}")
        if "--strict" in sys.argv:
            failures.append(f"{total} public items, bound {MAX_ITEMS}")
    if through:
        failures.append("public modules store/index: " + ", ".join(through))
    # The ledger cannot drift: every item it grants is a public item of the crate.
    public_names = {
        item["name"] for item in doc["index"].values()
        if item["crate_id"] == 0 and item["visibility"] == "public"
    }
    for why, path in GRANTED:
        if path.split("::")[-1] not in public_names:
            failures.append(f"GRANTED names {path} ({why}), which is not a public item")
    host_api = os.path.join(root, "tests", "host_api.rs")
    for n, line in enumerate(open(host_api), 1):
        if INTERNAL_PATHS.search(line):
            failures.append(f"tests/host_api.rs:{n} uses an internal path: {line.strip()}")
    for f in failures:
        print(f"FAIL: {f}")
    print("surface: " + ("broken" if failures else "sealed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
