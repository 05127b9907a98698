//! The Windows opener's checks on names, before any system call: which path components a walk
//! beneath a held folder may take. Plain string logic, so it is compiled and tested on every
//! platform (the Windows opener in `windows.rs` is its only user).
//!
//! A component is refused when Windows would read it as anything but one entry of the folder
//! held: `..` (the parent), a drive, root or UNC prefix (another place altogether), a `:` (an
//! alternate data stream of the entry, or a drive-relative path), a reserved device name (`CON`,
//! `NUL`, `COM1`… with or without an extension: the device, not a file), a trailing dot or space
//! (stripped by Win32, so `a.` would open `a`), and the characters Windows forbids in names
//! (wildcards `*` and `?`, `<`, `>`, `"`, `|`, and control characters). `.` and empty components
//! name the folder itself and are skipped, as the POSIX walk skips them.

// Used by the Windows opener; elsewhere only by its tests.
#![cfg_attr(not(windows), allow(dead_code))]

/// Why a path or name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// `..`, an absolute path or a prefix: it would leave the folder.
    Escapes,
    /// A name Windows reads as something other than an entry of the folder (a stream, a
    /// device, a name Win32 rewrites), or one it forbids.
    NotAName,
}

/// The devices Win32 finds in every folder, whatever the extension after them.
const DEVICES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$", "COM0", "COM1", "COM2", "COM3",
    "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2",
    "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// Checks one name: it must be a single entry of the folder it is looked up in.
///
/// # Errors
/// [`Refused::Escapes`] for `..`, [`Refused::NotAName`] for every other refused name (see the
/// module's documentation), including `.` and the empty name, which are no entry.
pub(super) fn check_name(name: &str) -> Result<(), Refused> {
    if name == ".." {
        return Err(Refused::Escapes);
    }
    if name.is_empty() || name == "." {
        return Err(Refused::NotAName);
    }
    let forbidden = |c: char| {
        matches!(c, '/' | '\\' | ':' | '*' | '?' | '<' | '>' | '"' | '|') || c.is_control()
    };
    if name.chars().any(forbidden) || name.ends_with(['.', ' ']) {
        return Err(Refused::NotAName);
    }
    // `NUL.txt` and `nul .txt` are the device too: the stem before the first dot, less
    // trailing spaces, compared without case.
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    if DEVICES.iter().any(|d| d.eq_ignore_ascii_case(stem)) {
        return Err(Refused::NotAName);
    }
    Ok(())
}

/// The components of `rel`, split at both of Windows' separators, each checked with
/// [`check_name`]; `.` and empty components are skipped. An empty result names the folder
/// itself.
///
/// # Errors
/// [`Refused::Escapes`] for a leading separator (a root, a UNC or `\\?\` prefix) or `..`
/// anywhere; [`Refused::NotAName`] for a drive (`C:`) or any other refused name.
pub(super) fn components(rel: &str) -> Result<Vec<&str>, Refused> {
    if rel.starts_with(['/', '\\']) {
        return Err(Refused::Escapes);
    }
    let mut names = Vec::new();
    for part in rel.split(['/', '\\']) {
        if part.is_empty() || part == "." {
            continue;
        }
        check_name(part)?;
        names.push(part);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::{Refused, check_name, components};

    #[test]
    fn x3_plain_names_and_paths_pass_and_dot_is_the_folder_itself() {
        for name in [
            "a",
            "index.sqlite3",
            ".CACHEDIR.TAG.123",
            "0f3a",
            "con-tent",
            "console",
            "nullish.txt",
            "com10",
            "skill.md",
            "..hidden",
        ] {
            assert_eq!(check_name(name), Ok(()), "{name}");
        }
        assert_eq!(components("a/b\\c"), Ok(vec!["a", "b", "c"]));
        assert_eq!(components("./a//b/."), Ok(vec!["a", "b"]));
        assert_eq!(components(""), Ok(vec![]));
        assert_eq!(components("."), Ok(vec![]));
    }

    #[test]
    fn x3_dotdot_roots_and_prefixes_are_refused_as_escaping() {
        for rel in [
            "..",
            "../outside",
            "a/../../outside",
            "a\\..\\..\\outside",
            "a/b/..",
            "\\windows\\system32",
            "/etc",
            "\\\\?\\C:\\Windows",
            "\\\\server\\share\\x",
            "\\\\.\\PhysicalDrive0",
        ] {
            assert_eq!(components(rel), Err(Refused::Escapes), "{rel}");
        }
    }

    #[test]
    fn x3_drives_streams_devices_and_rewritten_names_are_refused() {
        for rel in [
            "C:",
            "C:\\Windows",
            "C:foo",
            "a/blob:secret",
            "a/blob::$DATA",
            "con",
            "CON",
            "a/nul",
            "NUL.txt",
            "nul .txt",
            "a/COM1",
            "lpt9.log",
            "com¹",
            "CONIN$",
            "a.",
            "a/b ",
            "...",
            "a/*",
            "what?",
            "a<b",
            "a>b",
            "a|b",
            "a\"b",
            "tab\there",
            "nul\0",
        ] {
            assert_eq!(components(rel), Err(Refused::NotAName), "{rel:?}");
        }
        // A single name may not hide a path either.
        assert_eq!(check_name("a/b"), Err(Refused::NotAName));
        assert_eq!(check_name("a\\b"), Err(Refused::NotAName));
        assert_eq!(check_name(".."), Err(Refused::Escapes));
        assert_eq!(check_name("."), Err(Refused::NotAName));
        assert_eq!(check_name(""), Err(Refused::NotAName));
    }

    /// What a hostile server's names or a planted folder could try beyond the obvious: the
    /// devices under every spelling Win32 still resolves (an extension after them, spaces before
    /// the extension, any case, the superscript digits Win32 reads as 1 to 3, the console's and
    /// the clock's names), names Win32 shortens (a trailing dot or space anywhere at the end),
    /// and a stream named by its type. Refused, each as a name that is not one entry.
    #[test]
    fn x3_every_spelling_win32_reads_as_a_device_or_rewrites_is_refused() {
        for name in [
            "nul.tar.gz",
            "NuL.Md",
            "aux .md",
            "con..txt",
            "COM¹.txt",
            "lpt³.log",
            "conout$",
            "CONIN$.txt",
            "clock$",
            "Clock$.x",
            "prn",
            "a .",
            "a. ",
            "SKILL.md.",
            "SKILL.md ",
            "f::$DATA",
            "dir:$I30:$INDEX_ALLOCATION",
            "a\u{7f}",
        ] {
            assert_eq!(check_name(name), Err(Refused::NotAName), "{name:?}");
        }
        // Names that only look like one: a device's name inside a longer stem, a digit Win32
        // does not read as one, a leading dot or space, a tilde (an 8.3 alias is refused by
        // what the handle opened, not by its spelling: `windows.rs`), NTFS's own `$` names
        // (they live in a volume's root only, never listed, and NTFS refuses to open them).
        for name in [
            "nul-skill.md",
            "connect",
            "com10.txt",
            "COM⁴",
            "lpt",
            ".nul",
            " con",
            "PROGRA~1",
            "SKILL~1.MD",
            "$MFT",
            "$Extend",
        ] {
            assert_eq!(check_name(name), Ok(()), "{name:?}");
        }
        // A prefix inside a path is no prefix: `\\?\` fails on its `?`, and `\\.\` is empty
        // and `.` components under the held folder, never the device namespace.
        for rel in ["a/\\\\?\\C:", "a/./../b", "a/b/.. "] {
            assert!(components(rel).is_err(), "{rel:?}");
        }
        assert_eq!(components("a\\\\.\\pipe\\x"), Ok(vec!["a", "pipe", "x"]));
    }
}
