//! The JSON density rule (R-B2, R-E4): a cheap count of the values a JSON text would parse into,
//! made on its bytes as they arrive, so a text dense in tiny values is refused before it is
//! whole or parsed. A leaf, shared by every reader of outside JSON — a server's stdio messages
//! and the host configuration files — so there is one rule, not one per reader.

/// How much parsed JSON one message may hold, in the units of [`JsonWeight`]. An
/// answer within the limits — a page of skills of 512 files each, or one file as a string —
/// weighs far less (a listed file is about 14), and this weight parses into tens of MB at most,
/// where a 32 MiB `[0,0,0,…]` would parse into gigabytes.
pub(crate) const MAX_JSON_WEIGHT: u64 = 1_000_000;

/// The weight of one JSON message, counted as its bytes arrive: each object opened counts 8 (a
/// map and its node), each array opened 2, each `,` or `:` one — all outside strings. No
/// allocation; a message too dense in values is refused while it is read, before it is ever
/// whole in memory or parsed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct JsonWeight {
    weight: u64,
    in_string: bool,
    escaped: bool,
}

impl JsonWeight {
    /// Counts `chunk`; true as soon as the weight is over `max`.
    pub(crate) fn feed(&mut self, chunk: &[u8], max: u64) -> bool {
        for &b in chunk {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            self.weight += match b {
                b'"' => {
                    self.in_string = true;
                    0
                }
                b'{' => 8,
                b'[' => 2,
                b',' | b':' => 1,
                _ => 0,
            };
            if self.weight > max {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::JsonWeight;

    /// Whether `text` (one whole JSON message) weighs more than `max`.
    fn json_weight_exceeds(text: &[u8], max: u64) -> bool {
        JsonWeight::default().feed(text, max)
    }

    #[test]
    fn b2_structure_inside_strings_weighs_nothing_and_arrays_of_values_do() {
        let text = format!("{{\"text\":\"{}\"}}", "[,{:".repeat(100_000));
        assert!(!json_weight_exceeds(text.as_bytes(), 100));
        let zeros = format!("[{}0]", "0,".repeat(1_000));
        assert!(json_weight_exceeds(zeros.as_bytes(), 500));
        assert!(!json_weight_exceeds(zeros.as_bytes(), 5_000));
        // An escaped quote does not end the string.
        assert!(!json_weight_exceeds(br#"{"a":"\",,,,,,,"}"#, 12));
    }
}
