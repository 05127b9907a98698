//! How much of a host's input a binding copies before it is refused: one set of bounds for both
//! packages, checked as the input is walked and before each piece is copied.
//!
//! A binding copies a host's list, table or JSON value into Rust values. Counting items is not
//! enough: one string referenced many times (`[s] * 60_000` for a 1 MB `s`) or a list built by
//! `g = [g, g]` twenty times over (a few dozen objects, a million values when walked) are small in
//! the host's memory and enormous when copied, and a failed allocation aborts the process. So a
//! [`Budget`] is charged for every item and every character as it is reached, each reference
//! anew, and the walk stops with a `ConfigError` the moment it is spent.

use skillcache::Error;
use skillcache::error::ConfigError;

/// The most items in one list or table (arguments, environment, headers, local names).
pub const LIST_ITEMS: usize = 65_536;
/// The most characters of text in one list or table, over all its items (keys and values).
pub const LIST_TEXT: usize = 16 << 20;
/// How deep a grant of tools may nest.
pub const GRANT_DEPTH: usize = 32;
/// The most values in one grant, counted as walked (a value reached twice counts twice).
pub const GRANT_VALUES: usize = 10_000;
/// The most characters of text in one grant, keys and strings, counted as walked.
pub const GRANT_TEXT: usize = 1 << 20;

/// What is left of the items and characters one input may hold.
#[derive(Debug)]
pub struct Budget {
    what: &'static str,
    items: usize,
    text: usize,
    item_limit: usize,
    text_limit: usize,
}

impl Budget {
    /// For one list or table; `what` names it in the refusal (`"argv"`, `"env"`).
    #[must_use]
    pub fn list(what: &'static str) -> Budget {
        Budget::new(what, LIST_ITEMS, LIST_TEXT)
    }

    /// For one grant of tools.
    #[must_use]
    pub fn grant() -> Budget {
        Budget::new("grant_tools", GRANT_VALUES, GRANT_TEXT)
    }

    fn new(what: &'static str, items: usize, text: usize) -> Budget {
        Budget {
            what,
            items,
            text,
            item_limit: items,
            text_limit: text,
        }
    }

    /// Charges one item of `chars` characters (0 for a value that is not text), before it is
    /// copied.
    ///
    /// # Errors
    /// A `ConfigError` naming the input and the bound it passed.
    pub fn take(&mut self, chars: usize) -> Result<(), Error> {
        let Some(items) = self.items.checked_sub(1) else {
            return Err(self.refused(&format!("more than {} items", self.item_limit)));
        };
        let Some(text) = self.text.checked_sub(chars) else {
            return Err(self.refused(&format!("more than {} MiB of text", self.text_limit >> 20)));
        };
        (self.items, self.text) = (items, text);
        Ok(())
    }

    /// Refuses a length that is already over the item bound, before any item is walked.
    ///
    /// # Errors
    /// As [`take`](Self::take).
    pub fn fits(&self, len: usize) -> Result<(), Error> {
        if len > self.items {
            return Err(self.refused(&format!("more than {} items", self.item_limit)));
        }
        Ok(())
    }

    fn refused(&self, over: &str) -> Error {
        Error::Config(ConfigError::Invalid {
            what: format!(
                "{} refused: it holds {over} (each reference to the same value counts again)",
                self.what
            ),
        })
    }
}
