"""B8 from a Python host outside the repository: the wheel installed in a fresh venv, a 4 KiB file
read warm 3,000 times a sweep, median of 5 sweeps, beside the pure-Python floor (open + read +
hashlib.sha256 of the same file) in the same process."""
import asyncio, hashlib, os, sys, tempfile, time

import skillcache

SERVER = sys.argv[1]
N = 3000


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        skill = os.path.join(tmp, "skills", "bench-notes")
        os.makedirs(os.path.join(skill, "data"))
        with open(os.path.join(skill, "SKILL.md"), "w") as f:
            f.write("---\nname: bench-notes\ndescription: One 4 KiB file.\n---\nRead data/4k.bin.\n")
        path = os.path.join(skill, "data", "4k.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(4096))

        async def opened(name, **options):
            cache = skillcache.SkillCache(root=f"{tmp}/{name}", key_file=f"{tmp}/{name}.key", approval="not_required", **options)
            cache.connect_stdio("b8", [SERVER, "serve", os.path.join(tmp, "skills")], stderr=open(os.devnull, "w"))
            entry = (await cache.entry("b8", "skill://bench-notes/SKILL.md")).entry
            loaded = await cache.load("b8", entry)
            await loaded.read("data/4k.bin")
            return loaded

        rows = {
            "memory": await opened("m"),
            "rehash": await opened("r", memory_tier=0),
            "guaranteed": await opened("g", memory_tier=0, isolation="guaranteed"),
        }

        def floor() -> float:
            t = time.perf_counter()
            for _ in range(N):
                with open(path, "rb") as f:
                    hashlib.sha256(f.read()).hexdigest()
            return (time.perf_counter() - t) / N * 1e6

        async def hit(loaded) -> float:
            t = time.perf_counter()
            for _ in range(N):
                (await loaded.read("data/4k.bin")).bytes
            return (time.perf_counter() - t) / N * 1e6

        got = {"floor": [], **{k: [] for k in rows}}
        for _ in range(5):
            got["floor"].append(floor())
            for k, loaded in rows.items():
                got[k].append(await hit(loaded))
        med = {k: sorted(v)[2] for k, v in got.items()}
        print(f"floor {med['floor']:.2f} µs; " + "; ".join(f"{k} {med[k]:.2f} µs ({med[k] / med['floor']:.2f}x)" for k in rows))


asyncio.run(main())
