//! Lock files (R-E4, R-L1): reading any bytes never panics and stays bounded; a refusal quotes
//! none of the file (its key path is the lock's own vocabulary: `skill[2].file[0].digest`); a
//! lock that is read writes back as TOML that reads back as the same lock.
#![no_main]

#[path = "host_file_check.rs"]
mod host_file_check;

use libfuzzer_sys::fuzz_target;
use skillcache::LockFile;
use skillcache::error::{ConfigError, Error};

/// Whether `field` is a key path of the lock's own making: names of its keys, `[N]` indices.
fn own_key_path(field: &str) -> bool {
    field.split('.').all(|part| {
        let (name, index) = part.split_once('[').unwrap_or((part, "0]"));
        let index_ok = index
            .strip_suffix(']')
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
        index_ok
            && matches!(
                name,
                "" | "version" | "skill" | "origin" | "uri" | "binding" | "file" | "digest" | "size"
            )
    })
}

fuzz_target!(|data: &[u8]| {
    let path = host_file_check::scratch_file("skills.lock");
    std::fs::write(&path, data).expect("write the input");
    match LockFile::read(&path) {
        Ok(lock) => {
            let again = host_file_check::scratch_file("again.lock");
            lock.write(&again).expect("a lock read is a lock written");
            let back = LockFile::read(&again).expect("and read back");
            let pins = |l: &LockFile| {
                l.skills()
                    .map(|s| {
                        (
                            s.origin().clone(),
                            s.uri().as_str().to_owned(),
                            s.binding(),
                            s.files()
                                .map(|(u, d, n)| (u.as_str().to_owned(), d, n))
                                .collect::<Vec<_>>(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(pins(&lock), pins(&back));
        }
        Err(Error::Config(ConfigError::LockFile {
            field,
            problem,
            position,
            ..
        })) => {
            assert!(own_key_path(&field), "a key path of the input: {field:?}");
            host_file_check::assert_quotes_nothing(data, &host_file_check::words(&problem));
            if let Some((line, column)) = position {
                assert!(line >= 1 && column >= 1);
            }
        }
        Err(other) => panic!("a lock file is refused as a lock file: {other:?}"),
    }
});
