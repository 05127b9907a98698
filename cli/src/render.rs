//! What a command prints: for a person, or with `--json` one value. Every string a server or a
//! file chose is shown display-safe (R-E5); JSON strings are exactly the server's, their text
//! made inert by `inert::json`.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};
use skillcache::{
    Counter, EntryInfo, Origin, SkillCache, SkillEntry, SkillFile, SkillUri, Verification,
    display_safe,
};

/// `--json`: one value whose text is inert (R-E5) and whose strings are exactly the server's.
pub(crate) fn print_json(v: &Value) {
    PRINTED_JSON.store(true, std::sync::atomic::Ordering::Relaxed);
    outln!("{}", crate::inert::json(v));
}

/// Whether this command printed its JSON value already (a command that reports what it did and
/// then fails: `--json` still prints one value, that one).
static PRINTED_JSON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`PRINTED_JSON`].
pub(crate) fn printed_json() -> bool {
    PRINTED_JSON.load(std::sync::atomic::Ordering::Relaxed)
}

/// A string of a JSON row, display-safe for a person (R-E5).
fn shown(v: &Value) -> impl std::fmt::Display + '_ {
    display_safe(v.as_str().unwrap_or_default())
}

/// A progress bar on stderr, drawn only for a person at a terminal.
pub(crate) fn progress(json: bool, len: usize, template: &str) -> ProgressBar {
    let bar = if json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// The protocol revision a source negotiated, for `--json`: null when the server was never
/// contacted (a warm load of a fresh entry, or offline).
pub(crate) fn revision(version: Option<String>) -> Value {
    version.map_or(Value::Null, |v| json!(v))
}

/// One skill of a listing.
pub(crate) fn entry_row(e: &SkillEntry, fresh: bool) -> Value {
    let (files, bytes) = e
        .manifest()
        .map_or((0, 0), |m| (m.files().len(), m.total_bytes()));
    json!({
        "name": e.name(), "uri": e.uri().as_str(), "files": files, "bytes": bytes,
        "dynamic": e.is_dynamic(), "fresh": fresh,
        "binding": e.binding().map(|b| b.to_string()),
    })
}

/// `list`: one origin's skills.
pub(crate) fn listing(json: bool, origin: &Origin, version: Option<String>, rows: &[Value]) {
    if json {
        print_json(&json!({
            "origin": origin.as_str(),
            "protocol_version": revision(version),
            "skills": rows,
        }));
    } else {
        print_rows(rows, false);
    }
}

/// `list --all`: each origin's rows and failures, then a notice on stderr per name collision.
pub(crate) fn catalog(json: bool, origins: &[Value], collisions: &[Value]) {
    if json {
        print_json(&json!({"origins": origins, "collisions": collisions}));
    } else {
        for o in origins {
            outln!("origin {}", shown(&o["origin"]));
            if let Some(rows) = o.get("skills").and_then(Value::as_array) {
                print_rows(rows, true);
            }
            for e in o
                .get("errors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                outln!("  failed: {}", e.as_str().unwrap_or_default());
            }
        }
    }
    for c in collisions {
        collision_notice(c);
    }
}

/// One name several skills share: every party is named, none stands in for another.
fn collision_notice(c: &Value) {
    let parties: Vec<String> = c["handles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|h| {
            let local = c["local_handles"]
                .as_array()
                .is_some_and(|l| l.iter().any(|l| l == h));
            if local {
                format!("{h} (local skill)")
            } else {
                h.to_owned()
            }
        })
        .collect();
    eprintln!(
        "skillcache: notice: {} skills are named {:?}: {}; each is listed under its own handle, none stands in for another",
        parties.len(),
        c["name"].as_str().unwrap_or_default(),
        parties.join(", ")
    );
}

/// The rows of one origin's listing; with `handles`, each skill's catalog handle in place of
/// its name (the handle ends in the name).
fn print_rows(rows: &[Value], handles: bool) {
    let (title, key) = if handles {
        ("HANDLE", "handle")
    } else {
        ("NAME", "name")
    };
    outln!(
        "{:<28} {:>5} {:>9}  {:<14} URI",
        title,
        "FILES",
        "BYTES",
        "FLAGS"
    );
    for r in rows {
        if let Some(err) = r.get("error") {
            // The error's own text: skillcache's errors are display-safe already.
            outln!("{:<28} refused: {}", "-", err.as_str().unwrap_or_default());
            continue;
        }
        let flags = format!(
            "{}{}",
            if r["dynamic"] == true { "dynamic " } else { "" },
            if r["fresh"] == true { "fresh" } else { "stale" }
        );
        outln!(
            "{:<28} {:>5} {:>9}  {:<14} {}",
            shown(&r[key]),
            r["files"].as_u64().unwrap_or_default(),
            r["bytes"].as_u64().unwrap_or_default(),
            flags,
            shown(&r["uri"])
        );
    }
}

/// One pin `lock` wrote.
pub(crate) fn pin_row(origin: &Origin, e: &SkillEntry) -> Value {
    json!({"origin": origin.as_str(), "uri": e.uri().as_str(),
           "binding": e.binding().map(|b| b.to_string()),
           "files": e.manifest().map_or(0, |m| m.files().len())})
}

/// `lock`: what was pinned, and the file written.
/// A pin `lock --all` dropped.
pub(crate) struct Dropped {
    pub(crate) origin: Origin,
    pub(crate) uri: SkillUri,
    /// Still listed, but dynamic: no lock can pin it. Otherwise no longer listed.
    pub(crate) dynamic: bool,
}

pub(crate) fn locked(
    json: bool,
    output: &Path,
    rows: &[Value],
    dropped: &[Dropped],
    pinned: usize,
) {
    let why = |d: &Dropped| {
        if d.dynamic {
            "it is now dynamic, and a dynamic skill cannot be pinned"
        } else {
            "its server no longer publishes it"
        }
    };
    if json {
        let dropped: Vec<Value> = dropped
            .iter()
            .map(|d| json!({"origin": d.origin.as_str(), "uri": d.uri.as_str(), "why": why(d)}))
            .collect();
        print_json(
            &json!({"lock": output.display().to_string(), "locked": rows, "dropped": dropped}),
        );
        return;
    }
    for d in dropped {
        outln!("dropped {} from {}: {}", d.uri, d.origin, why(d));
    }
    for r in rows {
        outln!(
            "locked {} from {} (files: {}, binding {})",
            shown(&r["uri"]),
            shown(&r["origin"]),
            r["files"],
            shown(&r["binding"])
        );
    }
    outln!(
        "wrote {} ({pinned} skills pinned)",
        display_safe(&output.to_string_lossy()),
    );
}

/// `lock --check`: each drift, the dynamic skills beside the pins, and the count.
pub(crate) fn lock_checked(json: bool, lock: &Path, check: &skillcache::LockCheck) {
    let lock = display_safe(&lock.to_string_lossy()).to_string();
    if json {
        // The library's serialization of the check, with the lock file it read.
        let mut out = serde_json::to_value(check).unwrap_or_default();
        if let Value::Object(m) = &mut out {
            m.insert("lock".into(), json!(lock));
        }
        print_json(&out);
        return;
    }
    for d in &check.drift {
        outln!("drift: {d}");
    }
    for (origin, skill) in &check.dynamic {
        outln!(
            "note: {skill} from {origin} is dynamic: it cannot be pinned, and a locked load declines it"
        );
    }
    let differences = match check.drift.len() {
        0 => String::new(),
        n => format!(", {}", count(n, "difference", "differences")),
    };
    outln!(
        "{lock}: {} pinned, {} as pinned{differences}",
        count(check.pinned, "skill", "skills"),
        check.matched
    );
    if !check.is_clean() {
        // What to do next, for the person reading a failed CI job.
        outln!(
            "to accept what the servers publish now: run skillcache lock --all with the same \
             options (it rewrites {lock}), then review the lock's diff before committing it"
        );
    }
}

fn entry_json(origin: &Origin, info: &EntryInfo) -> Value {
    json!({
        "origin": origin.as_str(),
        "uri": info.entry.uri().as_str(),
        "binding": info.entry.binding().map(|b| b.to_string()),
        "from_cache": info.from_cache,
        "stale": info.stale,
        "revoked": info.revoked,
        "changes": info.diff.as_ref().map(ToString::to_string),
        "entry": info.entry.to_json(),
    })
}

/// `entry`: the resolved entry, where it came from, its files, and a revoked approval.
pub(crate) fn entry(json: bool, origin: &Origin, info: &EntryInfo, version: Option<String>) {
    if json {
        let mut out = entry_json(origin, info);
        out["protocol_version"] = revision(version);
        print_json(&out);
        return;
    }
    let e = &info.entry;
    outln!(
        "origin   {origin}\nuri      {}\nname     {}\nbinding  {}",
        e.uri(),
        e.name(),
        e.binding()
            .map_or_else(|| "none (dynamic)".to_owned(), |b| b.to_string())
    );
    outln!(
        "from     {}",
        match (info.from_cache, info.stale) {
            (true, true) => "cache (STALE: offline, past its ttlMs)",
            (true, false) => "cache (fresh)",
            (false, _) => "server (skills/get)",
        }
    );
    for f in e.manifest().map_or(&[][..], |m| m.files()) {
        outln!("  {}  {:>8}  {}", f.digest(), f.size(), f.uri());
    }
    if info.revoked {
        outln!(
            "approval REVOKED: {}",
            info.diff
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
    }
}

/// One approval made: the skill, its binding, and what was granted beside what it asks for.
pub(crate) fn approval_row(origin: &Origin, e: &SkillEntry, granted: Option<&Value>) -> Value {
    json!({"origin": origin.as_str(), "uri": e.uri().as_str(),
           "binding": e.binding().map(|b| b.to_string()),
           "granted_tools": granted, "requested_tools": e.requested_tools()})
}

/// `approve`: one approval.
pub(crate) fn approved(
    json: bool,
    origin: &Origin,
    entry: &SkillEntry,
    granted: Option<&Value>,
    version: Option<String>,
) {
    if json {
        let mut row = approval_row(origin, entry, granted);
        row["protocol_version"] = revision(version);
        print_json(&row);
        return;
    }
    outln!(
        "approved {} from {origin} (binding {})",
        entry.uri(),
        entry.binding().map(|b| b.to_string()).unwrap_or_default()
    );
    outln!("{}", grant_line(granted, entry.requested_tools()));
}

/// `approve --from-lock`: every approval made.
pub(crate) fn approved_from_lock(json: bool, lock: &Path, rows: &[Value]) {
    if json {
        print_json(&json!({"lock": lock.display().to_string(), "approved": rows}));
    } else {
        rows.iter().for_each(approval_text);
    }
}

fn approval_text(a: &Value) {
    outln!(
        "approved {} from {} (binding {})",
        shown(&a["uri"]),
        shown(&a["origin"]),
        shown(&a["binding"])
    );
    let present = |k: &str| Some(&a[k]).filter(|v| !v.is_null());
    outln!(
        "{}",
        grant_line(present("granted_tools"), present("requested_tools"))
    );
}

/// What an approval granted, for a person (E7): the grant is shown when it is made, beside what
/// the skill asks for, so a grant wider than expected is seen at once.
fn grant_line(granted: Option<&Value>, requested: Option<&Value>) -> String {
    // The server's text, inert (R-E5): an escape code in `allowed-tools` must not hide a tool
    // from the person granting it.
    let tools = |v: Option<&Value>| match v {
        None => "none".to_owned(),
        Some(Value::String(s)) => display_safe(s).to_string(),
        Some(other) => display_safe(&other.to_string()).to_string(),
    };
    format!(
        "  granted tools: {} (allowed-tools asks for: {})",
        tools(granted),
        tools(requested)
    )
}

pub(crate) fn file_json(f: &SkillFile, entry: &SkillEntry) -> Value {
    json!({
        "origin": f.origin().as_str(),
        "uri": f.uri().as_str(),
        "verified": matches!(f.verification(), Verification::Verified(_)),
        "source": f.provenance().to_string(),
        "digest": match f.verification() {
            Verification::Verified(d) => Some(d.to_string()),
            Verification::Unverified => None,
        },
        "size": f.bytes().len(),
        "binding": entry.binding().map(|b| b.to_string()),
        "retried": f.retried(),
        "stored": f.stored(),
    })
}

/// The cache's counters (R-P4), as `stats` and `load --json` print them.
pub(crate) fn counters_json(cache: &SkillCache) -> Value {
    Value::Object(
        cache
            .stats()
            .into_iter()
            .map(|(c, n)| (c.to_string(), Value::from(n)))
            .collect(),
    )
}

/// `load`/`read` offline, for a person: the entry in use is past its ttlMs.
pub(crate) fn stale_notice(entry: &SkillEntry) {
    eprintln!(
        "skillcache: notice: offline: the cached entry of {} is stale (past its ttlMs)",
        entry.uri()
    );
}

/// `load`/`read` for a person: the file's bytes, unchanged; or, with `--framed`, inside the
/// frame for model context (R-Q2). To a pipe or a file, those bytes unchanged: they are what a
/// script asked for. To a person at a terminal, the text with everything hidden escaped
/// (R-E5): a SKILL.md is the server's text, and its escape codes would drive the terminal.
pub(crate) fn file_bytes(file: &SkillFile, framed: bool) {
    let framed = framed.then(|| file.framed());
    let bytes = framed.as_ref().map_or(file.bytes(), String::as_bytes);
    let mut out = std::io::stdout().lock();
    let written = if out.is_terminal() {
        out.write_all(crate::inert::file_text(bytes).as_bytes())
    } else {
        out.write_all(bytes)
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        crate::stdout_failed(&e);
    }
}

/// `entries`: the cached entries (as JSON, the library's serialization of each).
pub(crate) fn entries(json: bool, rows: &[skillcache::CachedEntry]) {
    if json {
        print_json(&serde_json::to_value(rows).unwrap_or_default());
        return;
    }
    outln!(
        "{:<20} {:<8} {:>5} {:>9}  {:<6} URI",
        "ORIGIN",
        "SCOPE",
        "FILES",
        "BYTES",
        "FRESH"
    );
    for r in rows {
        outln!(
            "{:<20} {:<8} {:>5} {:>9}  {:<6} {}",
            display_safe(r.origin.as_str()),
            r.scope.to_string(),
            r.files,
            r.bytes,
            r.fresh.to_string(),
            display_safe(r.uri.as_str())
        );
    }
}

/// `n` and the noun, singular for one: "1 blob", "3 blobs".
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// `verify`: what was checked and found (as JSON, the library's serialization of the report).
pub(crate) fn verified(json: bool, report: &skillcache::VerifyReport) {
    if json {
        print_json(&serde_json::to_value(report).unwrap_or_default());
        return;
    }
    outln!(
        "checked {}: {} corrupt (quarantined), {} missing, {} orphaned, {}",
        count(report.checked, "blob", "blobs"),
        report.corrupt.len(),
        report.missing.len(),
        report.orphaned.len(),
        count(report.strays.len(), "stray", "strays")
    );
    for (o, d) in &report.corrupt {
        outln!("  corrupt {d} (origin {o})");
    }
}

/// `gc`: what was removed (as JSON, the library's serialization of the report).
pub(crate) fn collected(json: bool, r: &skillcache::GcReport) {
    if json {
        print_json(&serde_json::to_value(r).unwrap_or_default());
        return;
    }
    outln!(
        "gc: removed {} unreferenced and {} least-recently-used {}, {}; {} -> {} bytes{}",
        r.unreferenced,
        r.evicted,
        if r.unreferenced + r.evicted == 1 {
            "blob"
        } else {
            "blobs"
        },
        count(r.temporaries, "temporary", "temporaries"),
        r.bytes_before,
        r.bytes_after,
        if r.over_budget {
            " (still over budget: the rest belongs to fresh entries)"
        } else {
            ""
        }
    );
}

/// `purge --origin`.
/// `purge --origin`; `held`: the root held anything of it.
pub(crate) fn purged(json: bool, origin: &Origin, held: bool) {
    if json {
        print_json(&json!({"purged": origin.as_str(), "held": held}));
    } else if held {
        outln!("purged origin {origin}");
    } else {
        outln!("nothing cached for origin {origin}: nothing to purge");
    }
}

/// `purge --absent` (`config`: the file) and `purge --all` (no file): the origins removed, or
/// with `dry_run` those that would be.
pub(crate) fn purged_many(json: bool, config: Option<&Path>, origins: &[Origin], dry_run: bool) {
    if json {
        print_json(&json!({
            "config": config.map(|c| c.display().to_string()),
            "all": config.is_none(),
            "absent": origins.iter().map(Origin::as_str).collect::<Vec<_>>(),
            "dry_run": dry_run,
        }));
        return;
    }
    let why = config.map_or_else(String::new, |c| format!(" (not in {})", c.display()));
    if origins.is_empty() {
        if let Some(c) = config {
            outln!(
                "nothing to purge: {} names every origin in the cache",
                c.display()
            );
        } else {
            outln!("nothing to purge: the cache holds no origin");
        }
    }
    let verb = if dry_run { "would purge" } else { "purged" };
    for origin in origins {
        outln!("{verb} origin {origin}{why}");
    }
}

/// A purge of many origins stopped by an error: what it removed and what it left, on stderr
/// beside the error itself.
pub(crate) fn purge_stopped(removed: &[Origin], left: &[Origin]) {
    let list = |o: &[Origin]| {
        if o.is_empty() {
            "none".to_owned()
        } else {
            o.iter().map(Origin::as_str).collect::<Vec<_>>().join(", ")
        }
    };
    eprintln!(
        "skillcache: notice: the purge stopped at an error; already removed: {}; not removed: {}",
        list(removed),
        list(left)
    );
}

/// `stats`: the cache's counts and sizes, and this process's counters.
pub(crate) fn stats(json: bool, cache: &SkillCache, inv: &skillcache::Inventory) {
    // The library's serialization of the inventory, with the root and this process's counters.
    let mut out = serde_json::to_value(inv).unwrap_or_default();
    if let Value::Object(m) = &mut out {
        m.insert("root".into(), json!(cache.root().display().to_string()));
        // Rows seen while gathering these numbers that failed their seal (R-H3).
        m.insert(
            "seal_failures".into(),
            json!(cache.stats()[Counter::SealFailures]),
        );
        // This process's counters (R-P4): the files this command served and fetched, and the
        // rows seen while gathering these numbers that failed their seal (R-H3).
        m.insert("counters".into(), counters_json(cache));
    }
    if json {
        print_json(&out);
    } else if let Value::Object(m) = out {
        // One row per number, nested objects flattened to `counters.misses`, values in one column.
        let mut rows = Vec::new();
        for (k, v) in m {
            match v {
                Value::Object(counters) => {
                    rows.extend(counters.into_iter().map(|(c, n)| (format!("{k}.{c}"), n)));
                }
                v => rows.push((k, v)),
            }
        }
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, v) in rows {
            let v = v
                .as_str()
                .map_or_else(|| v.to_string(), |s| display_safe(s).to_string());
            outln!("{k:<width$} {v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::grant_line;
    use serde_json::json;

    /// R-E5, R-E7 (found in review): an escape code in the server's `allowed-tools` cannot
    /// conceal a tool on the line that shows the person what they grant.
    #[test]
    fn e5_the_grant_line_shows_the_servers_allowed_tools_inert() {
        let concealed = json!("Read \u{1b}[8mBash(*)\u{1b}[28m \u{202E}");
        let line = grant_line(Some(&concealed), Some(&concealed));
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{202E}'),
            "{line:?}"
        );
        assert!(
            line.contains(r"Read \x1b[8mBash(*)\x1b[28m \u{202E}"),
            "{line}"
        );
        let listed = json!(["Read", "Bash(\u{1b}[8m*)"]);
        assert!(!grant_line(Some(&listed), None).contains('\u{1b}'));
    }
}
