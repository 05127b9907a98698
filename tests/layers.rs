//! Issue 31, X1: the platform layer (`src/platform/`) is the only code that names an operating
//! system. Everything above it — the library's other layers, the CLI, and both bindings — is the
//! same source on Linux, macOS and Windows, so a guarantee written once holds on each platform
//! the way `docs/guarantees.md` says, and a new `cfg` elsewhere is a platform difference that
//! table does not know about. Here too: the layer table of docs/design.md matches `src/` (U5),
//! and the shape holds (U6: no function past 80 lines, the README within 450).

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

/// The longest a function of the project's own code may be (issue 40, U6): past it, a function
/// does more than one thing a reader can hold at once.
const LONGEST_FUNCTION: usize = 80;

/// Each function of `text` longer than [`LONGEST_FUNCTION`] lines, as `name (lines)`: a line that
/// declares a function with a body, to the line that closes it, counted by braces outside strings
/// and comments roughly (what a person sees as the function). A test module (`#[cfg(test)]`)
/// ends the scan: tests are tables of cases, read one case at a time.
fn long_functions(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        // `fn` among the words before the parameters (`pub(crate)`'s parenthesis is not them).
        let declares = !line.starts_with("//")
            && line
                .split_whitespace()
                .take_while(|w| w.starts_with("pub(") || !w.contains('('))
                .any(|w| w == "fn");
        if !declares {
            i += 1;
            continue;
        }
        let (mut depth, mut opened, mut end) = (0i32, false, None);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let code = l.split("//").next().unwrap_or_default();
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => break,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && code.trim_end().ends_with(';')) {
                end = Some(j);
                break;
            }
        }
        let Some(end) = end else { break };
        let length = end - i + 1;
        if opened && length > LONGEST_FUNCTION {
            let name = line
                .split("fn ")
                .nth(1)
                .unwrap_or(line)
                .split(['(', '<'])
                .next();
            out.push(format!("{} ({length} lines)", name.unwrap_or_default()));
        }
        i = if opened { end + 1 } else { i + 1 };
    }
    out
}

#[test]
fn u6_no_function_of_the_library_the_cli_or_the_bindings_runs_past_80_lines() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "cli/src", "binding/src", "node/src", "python/src"] {
        if repo.join(dir).is_dir() {
            rust_files(&repo.join(dir), &mut files);
        }
    }
    let long: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a source file");
            let shown = path
                .strip_prefix(repo)
                .unwrap_or(path)
                .display()
                .to_string();
            long_functions(&text)
                .into_iter()
                .map(move |f| format!("{shown}: {f}"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION} lines: {long:#?}"
    );
}

#[test]
fn u6_the_readme_stays_within_450_lines() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 450,
        "README.md has {lines} lines; the bound is 450"
    );
}

#[test]
fn u6_the_length_check_finds_a_long_function_and_passes_a_short_one() {
    let body = "    let x = 1;\n".repeat(LONGEST_FUNCTION);
    let long = format!(
        "/// a {{ brace in a comment\npub(crate) async fn long_one<T>(x: T) -> u8 {{\n{body}    0\n}}\n"
    );
    let short = "fn short() -> &'static str {\n    \"}\"\n}\nfn declared(x: u8);\n";
    assert_eq!(
        long_functions(&long),
        vec![format!("long_one ({} lines)", LONGEST_FUNCTION + 3)]
    );
    assert!(long_functions(short).is_empty());
    let tests_only = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(&tests_only).is_empty());
}
