//! What the disk pays for the store's files and folders (R-Q4, K2): allocated bytes, not
//! lengths, and the block a new file or folder is allocated in.
//!
//! The two platform-specific calls of the quota live here and nowhere else, each in one small
//! function, so that a platform layer can take them whole: [`allocated_bytes`] (a POSIX
//! `st_blocks`) and [`block_size`] (a POSIX `statvfs`).

use std::os::fd::BorrowedFd;

/// The block assumed where the filesystem will not say: the common one (ext4, XFS, APFS, NTFS).
pub(crate) const DEFAULT_BLOCK: u64 = 4096;

/// The bytes a file or folder costs on disk: what the filesystem allocated to it
/// (`st_blocks` counts 512-byte units whatever the filesystem's block, as `du` reads it), and
/// never less than its length: a filesystem that keeps a small file inline, compresses it or
/// leaves holes in it still holds its bytes somewhere.
pub(crate) fn allocated_bytes(st: &rustix::fs::Stat) -> u64 {
    let blocks = u64::try_from(st.st_blocks).unwrap_or(0).saturating_mul(512);
    blocks.max(u64::try_from(st.st_size).unwrap_or(0))
}

/// The filesystem's allocation unit under `dir` (`statvfs`'s fragment size: 4096 on ext4 and
/// XFS), what a new file's last partial block and a new folder cost; [`DEFAULT_BLOCK`] when the
/// filesystem does not say.
pub(crate) fn block_size(dir: BorrowedFd<'_>) -> u64 {
    rustix::fs::fstatvfs(dir)
        .ok()
        .map(|st| st.f_frsize)
        .filter(|&b| b > 0)
        .unwrap_or(DEFAULT_BLOCK)
}

/// `len` rounded up to whole blocks of `block` bytes: what a new file of `len` bytes is
/// allocated on a filesystem that does not keep small files inline.
pub(crate) fn in_blocks(len: u64, block: u64) -> u64 {
    len.div_ceil(block.max(1)).saturating_mul(block.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k2_a_length_is_charged_in_whole_blocks() {
        assert_eq!(in_blocks(0, 4096), 0);
        assert_eq!(in_blocks(8, 4096), 4096);
        assert_eq!(in_blocks(4096, 4096), 4096);
        assert_eq!(in_blocks(4097, 4096), 8192);
        assert_eq!(in_blocks(5, 0), 5, "a zero block is taken as one byte");
    }

    #[test]
    fn k2_an_eight_byte_file_costs_what_du_reports_and_never_less_than_its_length() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("tiny");
        std::fs::write(&path, b"8 bytes!").expect("write");
        let st = rustix::fs::stat(&path).expect("stat");
        let cost = allocated_bytes(&st);
        assert!(cost >= 8, "{cost}");
        assert_eq!(
            cost,
            (u64::try_from(st.st_blocks).expect("blocks") * 512).max(8)
        );
        let root = rustix::fs::open(
            dir.path(),
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
        .expect("open");
        let block = block_size(std::os::fd::AsFd::as_fd(&root));
        assert!(block.is_power_of_two() && block >= 512, "{block}");
    }
}
