//! What the disk pays for the store's files and folders (R-Q4, K2): allocated bytes, not
//! lengths, and the block a new file or folder is allocated in.
//!
//! What the platform says — a file's allocated bytes (`platform::Stat::allocated`) and the
//! filesystem's block (`platform::block_size`) — is read there; what the quota makes of it is here.

use crate::platform::{self, BorrowedFd};

/// The block assumed where the filesystem will not say: the common one (ext4, XFS, APFS, NTFS).
pub(crate) const DEFAULT_BLOCK: u64 = 4096;

/// The filesystem's allocation unit under `dir`, what a new file's last partial block and a new
/// folder cost; [`DEFAULT_BLOCK`] when the filesystem does not say.
pub(crate) fn block_size(dir: BorrowedFd<'_>) -> u64 {
    platform::block_size(dir).unwrap_or(DEFAULT_BLOCK)
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
        std::fs::write(dir.path().join("tiny"), b"8 bytes!").expect("write");
        let folder = platform::open_folder(dir.path(), false).expect("open");
        let st = platform::stat_at(platform::AsFd::as_fd(&folder), "tiny").expect("stat");
        assert!(st.allocated >= 8, "{}", st.allocated);
        let block = block_size(platform::AsFd::as_fd(&folder));
        assert!(block.is_power_of_two() && block >= 512, "{block}");
        // What `du` charges is what the layer reports (or the length, if more).
        if let Ok(du) = std::process::Command::new("du")
            .arg("-B1")
            .arg(dir.path().join("tiny"))
            .output()
        {
            let charged: u64 = String::from_utf8_lossy(&du.stdout)
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .expect("du prints a number");
            assert_eq!(st.allocated, charged.max(8));
        }
    }
}
