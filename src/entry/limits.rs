//! The per-skill limits of R-W7.

use crate::config_error::ConfigError;

/// Per-skill limits, checked from the entry alone before any file is fetched (R-W7).
///
/// The baseline, [`Limits::default`] (512 files, 16,777,216 bytes), must be accepted by every
/// host; a host may raise either limit, never lower it.
///
/// ```
/// use skillcache::entry::Limits;
/// assert_eq!(Limits::default(), Limits::new(512, 16 << 20).unwrap());
/// assert!(Limits::new(1024, 64 << 20).is_ok());
/// assert!(Limits::new(100, 16 << 20).is_err()); // below the baseline
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    max_files: u64,
    max_total_bytes: u64,
}

impl Limits {
    internal_pub! {
        /// 512 files and 16 MiB: what the spec requires every host to accept
        /// ([`Limits::default`]).
        const BASELINE: Limits = Limits {
            max_files: 512,
            max_total_bytes: 16 * 1024 * 1024,
        };
    }

    /// Raised limits.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) if either is below the baseline.
    pub fn new(max_files: u64, max_total_bytes: u64) -> Result<Limits, ConfigError> {
        if max_files < Self::BASELINE.max_files || max_total_bytes < Self::BASELINE.max_total_bytes
        {
            return Err(ConfigError::Invalid {
                what: format!(
                    "limits may be raised but never below the baseline of {} files and {} bytes",
                    Self::BASELINE.max_files,
                    Self::BASELINE.max_total_bytes
                ),
            });
        }
        Ok(Limits {
            max_files,
            max_total_bytes,
        })
    }

    /// The most files a skill may list. A binding that takes one of the two limits reads the other's default here.
    #[must_use]
    pub fn max_files(&self) -> u64 {
        self.max_files
    }

    /// The largest total size a skill may declare (and, for a dynamic skill, receive). A binding that takes one of the two limits reads the other's default here.
    #[must_use]
    pub fn max_total_bytes(&self) -> u64 {
        self.max_total_bytes
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::BASELINE
    }
}
