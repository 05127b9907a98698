//! Issue 31, X1: the platform layer (`src/platform/`) is the only code that names an operating
//! system. Everything above it — the library's other layers, the CLI, and both bindings — is the
//! same source on Linux, macOS and Windows, so a guarantee written once holds on each platform
//! the way `docs/guarantees.md` says, and a new `cfg` elsewhere is a platform difference that
//! table does not know about.

use std::path::{Path, PathBuf};

/// What names an operating system in Rust source: conditional compilation on one, or the
/// standard library's per-OS extension traits.
const OS_NAMES: &[&str] = &[
    "cfg(windows)",
    "cfg(unix)",
    "cfg(not(windows))",
    "cfg(not(unix))",
    "target_os",
    "target_family",
    "std::os::unix",
    "std::os::windows",
    "std::os::linux",
    "std::os::macos",
];

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let entry = entry.expect("a folder entry");
        let path = entry.path();
        let kind = entry.file_type().expect("its type");
        if kind.is_dir() {
            rust_files(&path, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn names_an_os(text: &str) -> Option<&'static str> {
    OS_NAMES.iter().copied().find(|n| text.contains(n))
}

#[test]
fn x1_only_the_platform_layer_names_an_operating_system() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let platform = repo.join("src").join("platform");
    let mut files = Vec::new();
    for dir in ["src", "cli/src", "python/src", "node/src"] {
        rust_files(&repo.join(dir), &mut files);
    }
    let (inside, outside): (Vec<_>, Vec<_>) = files.iter().partition(|f| f.starts_with(&platform));

    let offenders: Vec<String> = outside
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("a source file");
            names_an_os(&text).map(|n| format!("{} names `{n}`", f.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "only src/platform/ may name an operating system:\n{}",
        offenders.join("\n")
    );

    // The scan saw the code it is about: the whole tree, and a platform layer that does name
    // the systems it chooses between.
    assert!(outside.len() > 50, "scanned {} files", outside.len());
    let choosing = inside
        .iter()
        .filter(|f| names_an_os(&std::fs::read_to_string(f).expect("a source file")).is_some())
        .count();
    assert!(choosing >= 3, "{choosing} platform files name a system");
}

/// The names in the first column of docs/design.md's layer table: `name` for a file of `src/`,
/// `name/` for a folder.
fn layer_table() -> Vec<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(repo.join("docs/design.md")).expect("docs/design.md");
    let table = design
        .split("\n## Layers")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/design.md has a Layers section");
    table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .flat_map(|l| {
            let first = l.split('|').nth(1).unwrap_or_default();
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn u5_the_layer_table_in_design_md_names_every_module_of_src_and_nothing_else() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut modules = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(repo.join("src")).expect("src/") {
        let entry = entry.expect("a folder entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().expect("its type");
        if kind.is_dir() {
            modules.insert(format!("{name}/"));
        } else if let Some(stem) = name.strip_suffix(".rs").filter(|s| *s != "lib") {
            modules.insert(stem.to_owned());
        }
    }
    let table = layer_table();
    let named: std::collections::BTreeSet<String> = table.iter().cloned().collect();
    assert_eq!(named.len(), table.len(), "a module has two rows: {table:?}");
    let missing: Vec<_> = modules.difference(&named).collect();
    let gone: Vec<_> = named.difference(&modules).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/design.md's layer table: no row for {missing:?}; rows for what src/ no longer has: {gone:?}"
    );
}
