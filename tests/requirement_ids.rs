//! Every requirement id the repository cites is defined in docs/requirements.md (U5): a
//! maintainer who never saw the notes the ids came from can look each one up. The id pattern is
//! the one the doc's "How an id is spelled" section states; this test is its implementation.
//! It walks the folders on disk (no git needed: it runs on a bare clone and in a package).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folders whose text is scanned, from the crate's root.
const SCANNED: &[&str] = &[
    "src", "cli", "tests", "docs", "examples", "benches", "scripts", "python", "node", "fuzz",
    ".ci",
];

/// What is not ours or not text we write: third-party data, lock files, build output.
const SKIPPED: &[&str] = &[
    "tests/data",
    "fuzz/seeds",
    "fuzz/corpus",
    "fuzz/artifacts",
    "fuzz/target",
    "fuzz/coverage",
];
const SKIPPED_NAMES: &[&str] = &[
    "target",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    "Cargo.lock",
    "package-lock.json",
];

/// The letters of id families (docs/requirements.md).
const FAMILIES: &str = "ABCDEFGHJKLNOPQTUVWXY";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let rel = path.strip_prefix(root()).unwrap_or(&path);
        if SKIPPED_NAMES.iter().any(|s| name == *s) || SKIPPED.iter().any(|s| rel == Path::new(s)) {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => files(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

/// The number at `s`: 1–99 without a leading zero, and its length in bytes.
fn number(s: &[u8]) -> Option<usize> {
    match s {
        [b'1'..=b'9', b'0'..=b'9', ..] => Some(2),
        [b'1'..=b'9', ..] => Some(1),
        _ => None,
    }
}

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The ids one line cites, as the doc spells them: `R-` ids and bare ids.
fn ids(line: &str, out: &mut Vec<String>) {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let before = if i == 0 { b' ' } else { b[i - 1] };
        let starts = !word(before) && !b"%\\$#&{.".contains(&before);
        // An `R-` id.
        if c == b'R'
            && starts
            && b.get(i + 1) == Some(&b'-')
            && let Some(&letter) = b.get(i + 2).filter(|l| l.is_ascii_uppercase())
            && let Some(n) = number(&b[i + 3..])
            && b.get(i + 3 + n)
                .is_none_or(|&a| !a.is_ascii_alphanumeric() && a != b'_')
        {
            let end = i + 3 + n;
            out.push(format!("R-{}{}", char::from(letter), &line[i + 3..end]));
            i = end;
            continue;
        }
        // A bare id; not the head of a Rust path (`L2::timeout`).
        if FAMILIES.as_bytes().contains(&c)
            && starts
            && let Some(n) = number(&b[i + 1..])
            && b.get(i + 1 + n).is_none_or(|&a| !word(a))
            && !line[i + 1 + n..].starts_with("::")
        {
            let end = i + 1 + n;
            out.push(line[i..end].to_owned());
            i = end;
            continue;
        }
        i += 1;
    }
    test_name_ids(line, out);
}

/// The ids a test function's name starts with: `fn p1_a2_…`, `def test_y1_…`.
fn test_name_ids(line: &str, out: &mut Vec<String>) {
    let trimmed = line.trim_start();
    let name = ["async fn ", "fn ", "async def test_", "def test_"]
        .iter()
        .find_map(|p| trimmed.strip_prefix(p).filter(|_| trimmed.contains('(')));
    let Some(mut name) = name else { return };
    loop {
        let b = name.as_bytes();
        let Some(&letter) = b.first().filter(|l| l.is_ascii_lowercase()) else {
            return;
        };
        let Some(n) = number(&b[1..]) else { return };
        if b.get(1 + n) != Some(&b'_') {
            return;
        }
        let upper = letter.to_ascii_uppercase();
        if FAMILIES.as_bytes().contains(&upper) {
            out.push(format!("{}{}", char::from(upper), &name[1..=n]));
        }
        name = &name[n + 2..];
    }
}

/// The ids docs/requirements.md defines (lines `- **ID** …`) and the names it says are not ids
/// (lines of the "Not ids" section that start with a backticked name).
fn definitions() -> (BTreeSet<String>, BTreeSet<String>) {
    let doc = std::fs::read_to_string(root().join("docs/requirements.md"))
        .expect("docs/requirements.md is in the repository");
    let (mut defined, mut not_ids) = (BTreeSet::new(), BTreeSet::new());
    let mut section = "";
    for line in doc.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title;
        } else if let Some(rest) = line.strip_prefix("- **") {
            let id = rest.split("**").next().unwrap_or_default();
            assert!(
                defined.insert(id.to_owned()),
                "{id} is defined twice in docs/requirements.md"
            );
        } else if let Some(rest) = line.strip_prefix("- `").filter(|_| section == "Not ids") {
            not_ids.insert(rest.split('`').next().unwrap_or_default().to_owned());
        }
    }
    (defined, not_ids)
}

/// Every id the scanned files cite, with the first place each is cited.
fn cited() -> BTreeMap<String, String> {
    let mut all = Vec::new();
    for dir in SCANNED {
        files(&root().join(dir), &mut all);
    }
    let mut cited = BTreeMap::new();
    for path in all {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // not UTF-8: not text we write
        };
        let rel = path
            .strip_prefix(root())
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut found = Vec::new();
        for (n, line) in text.lines().enumerate() {
            found.clear();
            ids(line, &mut found);
            for id in found.drain(..) {
                cited
                    .entry(id)
                    .or_insert_with(|| format!("{rel}:{}", n + 1));
            }
        }
    }
    cited
}

#[test]
fn u5_every_id_the_repository_cites_is_defined_in_docs_requirements() {
    let (defined, not_ids) = definitions();
    let cited = cited();
    assert!(cited.len() > 100, "the scan found only {} ids", cited.len());
    let undefined: Vec<String> = cited
        .iter()
        .filter(|(id, _)| {
            let bare_resolves = !id.starts_with("R-") && defined.contains(&format!("R-{id}"));
            !defined.contains(*id) && !not_ids.contains(*id) && !bare_resolves
        })
        .map(|(id, at)| format!("{id} (first at {at})"))
        .collect();
    assert!(
        undefined.is_empty(),
        "ids with no line in docs/requirements.md: {undefined:?}"
    );
}

#[test]
fn u5_the_id_pattern_reads_citations_and_leaves_prose_alone() {
    let read = |line: &str| {
        let mut out = Vec::new();
        ids(line, &mut out);
        out
    };
    assert_eq!(
        read("sealed rows (R-H3, R-H1…H13)"),
        ["R-H3", "R-H1", "H13"]
    );
    assert_eq!(
        read("the frame (K1), issue 31 X3; B1–B8"),
        ["K1", "X3", "B1", "B8"]
    );
    assert_eq!(
        read("fn p1_a2_revoked_approval_is_declined() {"),
        ["P1", "A2"]
    );
    assert_eq!(read("async def test_y1_a_session(tmp) -> None:"), ["Y1"]);
    assert_eq!(read("test('J3: a hit is a copy', () => {"), ["J3"]);
    for prose in [
        "skill://a/caf%C3%A9",
        "display_safe(\"\\u{A0}\")",
        "`L2::timeout` and S3 and I30 and M16",
        "B02, B04 and H10x and X1a and A-1",
        "fn main() {",
        "fn x_1_is_no_id() {",
    ] {
        assert_eq!(read(prose), Vec::<String>::new(), "{prose}");
    }
}

#[test]
fn u5_the_id_doc_defines_each_id_once_with_text() {
    let doc = std::fs::read_to_string(root().join("docs/requirements.md")).expect("the doc");
    let (defined, _) = definitions();
    assert!(defined.contains("R-H3") && defined.contains("K1") && defined.contains("U5"));
    for line in doc.lines().filter(|l| l.starts_with("- **")) {
        let text = line.splitn(3, "**").nth(2).unwrap_or_default().trim();
        assert!(
            text.len() > 10,
            "a definition says what the id means: {line}"
        );
    }
}

#[test]
fn u6_the_readme_is_a_users_document_of_at_most_450_lines_and_cites_no_id() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 450,
        "README.md has {lines} lines: move detail to docs/"
    );
    let mut cited = Vec::new();
    for line in readme.lines() {
        ids(line, &mut cited);
    }
    // `L2` is also the shared tier's name, which users read.
    cited.retain(|id| id != "L2");
    assert!(cited.is_empty(), "README.md cites {cited:?}");
}
