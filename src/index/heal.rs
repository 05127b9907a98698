//! A damaged index heals (R-H6): the damaged file and its `-wal`/`-shm` are moved aside, never
//! deleted, so a person can still inspect them, and a fresh index takes their place. Blobs are
//! not the index's business and stay; approvals lived only in the damaged file, so they are
//! lost, which fails closed (nothing is approved until approved again).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

use super::error::IndexError;
use crate::turn::Turn;
use super::{db_err, open};

/// Opens the index at `path` ([`open::open`]), moving a damaged one aside for a fresh one; the
/// connection, how it was opened, and where a damaged index went. Used when an index is opened
/// and when a connection a fork closed is opened again ([`super::conns`]): a file damaged or
/// removed meanwhile heals there too (round 29 of review, F1-R).
pub(super) fn open_healing(
    path: &Path,
) -> Result<(Connection, open::Mode, Option<PathBuf>), IndexError> {
    let mut healed = None;
    // A bounded number of tries: another process may heal the same file at the same time.
    let mut tries = 0;
    // Opens take the turn shared, a healer exclusive, from the move aside until its fresh index
    // is open: no open is under way while the files move (round 30 of review, E: a connection
    // opening the damaged file found its log moved, "disk I/O error", "locking protocol"), and
    // no other healer looks at a half-made index.
    let mut held: Option<Turn> = None;
    loop {
        tries += 1;
        if held.is_none() {
            held = Some(turn(path, false)?);
        }
        let before = identity(path);
        match open::open(path) {
            Ok((conn, mode)) => return Ok((conn, mode, healed)),
            Err(open::Failure::Fatal(e)) => return Err(*e),
            Err(open::Failure::Damaged(cause)) => {
                if tries > 3 {
                    return Err(db_err("open")(cause));
                }
                // One healer at a time, in every process (round 30 of review, E: a healer that
                // looked before another moved the damaged file aside then moved the other's
                // fresh index aside, or found nothing to move and failed).
                drop(held.take()); // a second lock of our own would wait on the first
                held = Some(turn(path, true)?);
                if identity(path) != before {
                    continue; // replaced meanwhile (healed by another process): look again
                }
                let Some(dest) = move_aside(path)? else {
                    continue; // removed meanwhile: a fresh one is made on the next look
                };
                tracing::warn!(
                    index = %path.display(),
                    moved_to = %dest.display(),
                    cause = %cause,
                    "the index was damaged: moved it aside and started a fresh one; cached \
                     files are kept, entries will be fetched again, approvals are lost"
                );
                healed = Some(dest);
            }
        }
    }
}

/// A turn at the index's files ([`crate::turn`]), taken on the index's folder.
fn turn(index: &Path, exclusive: bool) -> Result<Turn, IndexError> {
    let folder = index.parent().unwrap_or_else(|| Path::new("."));
    Turn::take(folder, exclusive).map_err(|source| IndexError::Io {
        op: "take a turn at the index's files",
        path: folder.to_owned(),
        source,
    })
}

/// The file's identity (device, inode), to notice that another process replaced it meanwhile.
pub(super) fn identity(path: &Path) -> Option<(u64, u64)> {
    fs::symlink_metadata(path)
        .ok()
        .and_then(|m| crate::platform::file_identity(&m))
}

/// `path` with `suffix` added to its last component (`index.sqlite3-wal`).
pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Moves the damaged database at `path` (and its `-wal` and `-shm`) to
/// `<name>.damaged-<unix seconds>` beside it, and returns where it went. A name already taken
/// (two heals in one second) gets a counter: nothing is ever overwritten.
pub(super) fn move_aside(path: &Path) -> Result<Option<PathBuf>, IndexError> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = with_suffix(path, &format!(".damaged-{secs}"));
    let mut dest = base.clone();
    let mut n = 1u32;
    while fs::symlink_metadata(&dest).is_ok()
        || fs::symlink_metadata(with_suffix(&dest, "-wal")).is_ok()
    {
        n += 1;
        dest = with_suffix(&base, &format!(".{n}"));
    }
    match fs::rename(path, &dest) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(IndexError::Io {
                op: "move the damaged index aside",
                path: path.to_owned(),
                source,
            });
        }
    }
    // The old WAL must not be replayed into the fresh database, so it goes too.
    for suffix in ["-wal", "-shm"] {
        let from = with_suffix(path, suffix);
        match fs::rename(&from, with_suffix(&dest, suffix)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(IndexError::Io {
                    op: "move the damaged index aside",
                    path: from,
                    source,
                });
            }
        }
    }
    Ok(Some(dest))
}

/// Removes every damaged copy [`move_aside`] left beside `path` (with its `-wal` and `-shm`),
/// and only those: names `<name>.damaged-<digits>` with an optional `.<n>` and suffix, regular
/// files or links (a link is removed itself). Missing is fine.
pub(super) fn remove_damaged_copies(path: &Path) -> Result<(), IndexError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Ok(());
    };
    let prefix = format!("{name}.damaged-");
    let fail = |op: &'static str, path: PathBuf| move |source: io::Error| IndexError::Io { op, path, source };
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(fail("read the index's folder", dir.to_owned())(e)),
    };
    for entry in entries {
        let entry = entry.map_err(fail("read the index's folder", dir.to_owned()))?;
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let rest = rest
            .strip_suffix("-wal")
            .or_else(|| rest.strip_suffix("-shm"))
            .unwrap_or(rest);
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            continue;
        }
        let path = entry.path();
        if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_dir()) {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(fail("remove a damaged index copy", path)(e));
                }
                _ => tracing::info!(path = %path.display(), "removed a damaged index kept aside: it held the purged origin's rows among others"),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::open_healing;

    /// Round 30 of review (E): healers that found one damaged index at once each moved "it"
    /// aside — one the damaged file, the next the fresh index the first had just made, or
    /// nothing, failing with "No such file". Healers take turns now: every open succeeds, and
    /// the damaged file is moved aside once, by one of them.
    #[test]
    fn healers_of_one_damaged_index_at_once_each_open_it_and_one_moves_it_aside() {
        let dir = crate::scratch::scratch();
        let path = dir.path().join("index.sqlite3");
        let healers = 6;
        for round in 1..=40 {
            std::fs::write(&path, b"not a database, not at all").expect("damage");
            let start = Arc::new(Barrier::new(healers));
            let opened: Vec<_> = (0..healers)
                .map(|_| {
                    let (path, start) = (path.clone(), Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        open_healing(&path).map(|(conn, _, healed)| (conn, healed))
                    })
                })
                .collect();
            let mut moved = 0;
            let mut conns = Vec::new();
            for healer in opened {
                let (conn, healed) = healer.join().expect("no panic").expect("every open succeeds");
                moved += usize::from(healed.is_some());
                conns.push(conn);
            }
            assert_eq!(moved, 1, "round {round}: moved aside by {moved} healers");
            let copies = std::fs::read_dir(dir.path())
                .expect("list")
                .filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.contains(".damaged-") && !name.ends_with("-wal") && !name.ends_with("-shm")
                })
                .count();
            assert_eq!(copies, round, "round {round}: a fresh index was moved aside too");
            drop(conns);
        }
    }
}
