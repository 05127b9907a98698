//! The cache layer's error: bytes that failed verification.

use crate::mismatch::Mismatch;
use crate::origin::Origin;
use crate::uri::FileUri;

/// Bytes did not match the entry they were checked against (R-V2…R-V6). They were not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "verification failed for {} from origin {origin}: {mismatch}",
    crate::display::display_cut_bare(uri.as_str())
)]
pub struct VerifyError {
    /// The host's label of the server the skill came from.
    pub origin: Origin,
    /// The file's URI.
    pub uri: FileUri,
    /// What did not match.
    pub mismatch: Mismatch,
}
