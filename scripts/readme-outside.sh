#!/bin/sh
# The README's Rust host examples, built and run as a host outside this repository would (U3):
# a fresh cargo project in a temporary folder, depending on this clone by `path` with the
# dependency line and the features the README's "Your first host, outside this repository"
# gives, one binary per example (each ```rust block with a `main`, hidden `# ` lines shown, as
# rustdoc compiles it). The host example against a real server is run with the `skillcache`
# binary and the bundled samples as its arguments. The host's dependency tree must hold none of
# the command line's dependencies.
#
#   sh scripts/readme-outside.sh
#
# It shares this clone's target/ (CARGO_TARGET_DIR, unless one is set) and starts from its
# Cargo.lock and dev profile, so the dependencies are the ones already built. Exits non-zero
# when an example fails to build or to run.
set -eu

clone=$(cd "$(dirname "$0")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$clone/target}"
work=$(mktemp -d "${TMPDIR:-/tmp}/readme-outside.XXXXXX")
# The examples purge their caches; whatever a failed one left read-only is made removable.
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

host="$work/first-host"
mkdir -p "$host/src/bin"
cp "$clone/Cargo.lock" "$host/Cargo.lock"

# Each example as src/bin/readme_N.rs; prints the names of those that run against a server.
python3 - "$clone/README.md" "$host/src/bin" > "$work/examples" <<'EOF'
import re, sys
readme, out = sys.argv[1], sys.argv[2]
blocks = re.findall(r"^```rust[^\n]*\n(.*?)^```", open(readme).read(), re.S | re.M)
n = 0
for block in blocks:
    # rustdoc's hidden lines: `# code` is code, a lone `#` an empty line, `##` a literal `#`.
    lines = []
    for line in block.splitlines():
        if line == "#":
            lines.append("")
        elif line.startswith("##"):
            lines.append(line[1:])
        elif line.startswith("# "):
            lines.append(line[2:])
        else:
            lines.append(line)
    code = "\n".join(lines) + "\n"
    if "fn main()" not in code:
        continue
    n += 1
    name = f"readme_{n}"
    open(f"{out}/{name}.rs", "w").write(code)
    print(name, "server" if "McpSource::stdio" in code else "alone")
if n == 0:
    sys.exit("README.md has no Rust example with a main")
EOF

cat > "$host/Cargo.toml" <<EOF
[package]
name = "first-host"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
skillcache = { path = "$clone" }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "process"] }
tempfile = "3"

# As the clone builds its dependencies, so that the shared target/ already holds them.
[profile.dev.package."*"]
opt-level = 3
EOF

# The server the real-server example starts: the clone's own binary.
(cd "$clone" && cargo build --quiet -p skillcache-cli --bin skillcache)
server="$CARGO_TARGET_DIR/debug/skillcache"

cd "$host"
# The host depends on the library at its default features: nothing of the command line is in its
# build (clap, indicatif, tracing-subscriber, hyper's server side; the CLI is the cli/ crate).
tree=$(cargo tree --quiet -e normal,features --prefix none)
if cli=$(printf '%s\n' "$tree" | grep -E '^(clap|indicatif|tracing-subscriber) |^hyper feature "server"'); then
    echo "readme-outside: a host's build has the command line's dependencies:"
    printf '%s\n' "$cli" | sort -u
    exit 1
fi
cargo build --quiet --bins
while read -r name kind; do
    echo "readme-outside: $name"
    if [ "$kind" = server ]; then
        "$CARGO_TARGET_DIR/debug/$name" "$server" "$clone/samples/skills" > "$work/$name.out"
    else
        "$CARGO_TARGET_DIR/debug/$name" > "$work/$name.out"
    fi
done < "$work/examples"
echo "readme-outside: $(wc -l < "$work/examples") README examples built and ran outside the clone"
