"""Checks every binary scripts/dist.sh put in target/dist (issue 42, L2): each is of the format
and architecture its name promises, and exports the entry point its loader calls. That is all
that can be checked here of the macOS and Windows artifacts (no such machine); the Linux ones are
also run (scripts/dist-install-test.sh natively, scripts/dist-qemu-test.sh for aarch64).

- a wheel's extension module: `PyInit_<module>` (CPython's entry point), and for abi3 no
  libpython linked in (an abi3 module takes the interpreter's symbols from the process);
- a per-platform npm package's `.node`: `napi_register_module_v1` (Node-API's);
- a CLI archive's `skillcache` / `skillcache.exe`: an executable of the platform.

Uses `file`, `llvm-nm` (ELF, Mach-O) and `llvm-readobj --coff-exports` (PE), from Debian's
`file` and `llvm`. Exits 1 naming every artifact that fails.

    python3 scripts/dist-check.py [target/dist]
"""

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# What `file` says of each platform's binaries, by the platform part of an artifact's name.
FORMATS = {
    "x86_64-linux": ("ELF 64-bit LSB", "x86-64"),
    "aarch64-linux": ("ELF 64-bit LSB", "ARM aarch64"),
    "x86_64-macos": ("Mach-O 64-bit", "x86_64"),
    "aarch64-macos": ("Mach-O 64-bit", "arm64"),
    "x86_64-windows": ("PE32+ executable", "x86-64"),
}


def platform_of(name: str) -> str | None:
    """The key of FORMATS an artifact's file name names (wheel tags, napi-rs and Rust targets)."""
    n = name.lower()
    arch = "aarch64" if any(a in n for a in ("aarch64", "arm64")) else "x86_64" if any(a in n for a in ("x86_64", "x64", "amd64")) else None
    system = "linux" if "linux" in n else "macos" if any(s in n for s in ("macosx", "darwin")) else "windows" if any(s in n for s in ("win", "windows")) else None
    return f"{arch}-{system}" if arch and system else None


def exported(path: Path, system: str) -> set[str]:
    """The names `path` exports, without Mach-O's leading underscore."""
    if system == "windows":
        out = subprocess.run(["llvm-readobj", "--coff-exports", str(path)], capture_output=True, text=True, check=True).stdout
        return {line.split(":", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Name:")}
    # ELF: the dynamic table (a release build strips the other); Mach-O keeps its exports.
    dynamic = ["-D"] if system == "linux" else []
    out = subprocess.run(["llvm-nm", *dynamic, "-g", "--defined-only", "-j", str(path)], capture_output=True, text=True, check=True).stdout
    names = set(out.split())
    return names | {n[1:] for n in names if system == "macos" and n.startswith("_")}


def linked(path: Path, system: str) -> str:
    """The libraries `path` names to the loader, as text to search."""
    if system == "windows":
        args = ["llvm-readobj", "--coff-imports", str(path)]
    elif system == "macos":
        args = ["llvm-objdump", "--macho", "--dylibs-used", str(path)]
    else:
        args = ["llvm-readobj", "--needed-libs", str(path)]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def check(binary: Path, where: str, plat: str, symbol: str | None, abi3: bool) -> list[str]:
    problems = []
    kind = subprocess.run(["file", "-b", str(binary)], capture_output=True, text=True, check=True).stdout.strip()
    fmt, arch = FORMATS[plat]
    system = plat.split("-")[1]
    if fmt not in kind or arch not in kind:
        problems.append(f"{where}: `file` says {kind!r}, not {fmt} {arch}")
    if symbol and symbol not in exported(binary, system):
        problems.append(f"{where}: does not export {symbol}")
    if abi3 and "libpython" in linked(binary, system).lower():
        problems.append(f"{where}: links libpython, which an abi3 module must not")
    return problems


def main() -> int:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "target/dist")
    problems, checked = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for artifact in sorted(dist.iterdir()):
            plat = platform_of(artifact.name)
            members: list[tuple[str, bytes, str | None, bool]] = []
            if artifact.suffix == ".whl" and plat:
                with zipfile.ZipFile(artifact) as z:
                    # CPython calls PyInit_<the module's name>: `_skillcache` here.
                    members = [(m, z.read(m), "PyInit_" + Path(m).name.split(".")[0], "abi3" in artifact.name) for m in z.namelist() if m.endswith((".so", ".pyd"))]
            elif artifact.name.endswith(".tgz") and plat:
                with tarfile.open(artifact) as t:
                    members = [(m.name, t.extractfile(m).read(), "napi_register_module_v1", False) for m in t.getmembers() if m.name.endswith(".node")]
            elif artifact.name.startswith("skillcache-cli-") and plat:
                with tarfile.open(artifact) as t:
                    members = [(m.name, t.extractfile(m).read(), None, False) for m in t.getmembers() if m.name.endswith(("/skillcache", "/skillcache.exe"))]
            else:
                continue
            if not members:
                problems.append(f"{artifact.name}: holds no binary")
            for name, data, symbol, abi3 in members:
                binary = Path(tmp) / Path(name).name
                binary.write_bytes(data)
                found = check(binary, f"{artifact.name}:{name}", plat, symbol, abi3)
                problems += found
                checked += 1
                print(f"{'ok' if not found else 'FAILED'}: {artifact.name}: {name} ({plat}{', exports ' + symbol if symbol else ''})")
    if problems:
        print("\n".join(["", "dist check failed:"] + [f"  {p}" for p in problems]))
        return 1
    print(f"dist check: {checked} binaries of the format and architecture their names promise, with their entry points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
