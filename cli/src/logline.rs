//! How the library's log events read on the CLI's stderr: one line each, in the form of the
//! CLI's own notices (`skillcache: warning: a cached copy failed verification (origin:
//! demo-server, uri: skill://…, mismatch: …)`), never `WARN … origin=… uri=…` (a newcomer's try
//! read the demo's two such lines as noise). Every value passes through `display_safe`: a field
//! may hold a server's text.

use std::fmt::{self, Write as _};

use skillcache::display_safe;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The CLI's event format (see the module's comment).
pub(crate) struct LogLine;

impl<S, N> FormatEvent<S, N> for LogLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Line::default();
        event.record(&mut line);
        writeln!(writer, "{}", line.finish(*event.metadata().level()))
    }
}

/// One event's message and its other fields, as they are visited.
#[derive(Default)]
struct Line {
    message: String,
    fields: Vec<(&'static str, String)>,
}

impl Line {
    fn keep(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.message = value;
        } else {
            self.fields.push((field.name(), value));
        }
    }

    fn finish(self, level: Level) -> String {
        let level = match level {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        let mut out = format!("skillcache: {level}: {}", display_safe(&self.message));
        for (i, (name, value)) in self.fields.iter().enumerate() {
            let open = if i == 0 { " (" } else { ", " };
            let _ = write!(
                out,
                "{open}{}: {}",
                name.replace('_', " "),
                display_safe(value)
            );
        }
        if !self.fields.is_empty() {
            out.push(')');
        }
        out
    }
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.keep(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here already in their `Display` form; a message too.
        self.keep(field, format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::Line;
    use tracing::Level;

    #[test]
    fn a_warning_reads_as_the_cli_notices_do_with_its_fields_in_words() {
        let line = Line {
            message: "a cached copy failed verification".to_owned(),
            fields: vec![
                ("origin", "demo".to_owned()),
                ("new_root", "/r\u{1b}[2J".to_owned()),
            ],
        };
        assert_eq!(
            line.finish(Level::WARN),
            r"skillcache: warning: a cached copy failed verification (origin: demo, new root: /r\x1b[2J)"
        );
    }
}
