//! `--stdio "CMD"`: the CLI's shell-like command lines (the library takes a built
//! `tokio::process::Command`; parsing a string is the binary's business).

/// Splits a command line into words like a POSIX shell would — spaces, single and double quotes,
/// backslashes — without any expansion.
///
/// # Errors
/// An unterminated quote or a trailing backslash.
pub(crate) fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next().ok_or("trailing backslash")?);
            }
            ch => {
                in_word = true;
                word.push(ch);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The command `--stdio` names, split once when the command line is checked: a line that does
/// not split, or that names no program, is a usage error (exit 2).
#[derive(Debug)]
pub(crate) struct StdioCommand {
    program: String,
    args: Vec<String>,
}

impl StdioCommand {
    pub(crate) fn parse(line: &str) -> Result<StdioCommand, String> {
        let mut words = split_command_line(line)?.into_iter();
        let program = words
            .next()
            .ok_or_else(|| "the command line is empty".to_owned())?;
        Ok(StdioCommand {
            program,
            args: words.collect(),
        })
    }

    /// The process to spawn (a new one each call: `tokio::process::Command` is not `Clone`).
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        // Piped: skillcache passes the server's stderr on to ours as it arrives, and names its
        // last line when the server exits before answering.
        command
            .args(&self.args)
            .stderr(std::process::Stdio::piped());
        command
    }
}

#[cfg(test)]
mod tests {
    use super::{StdioCommand, split_command_line};

    #[test]
    fn quotes_and_backslashes_group_words_without_expansion() {
        assert_eq!(
            split_command_line(r#"node "my server.js" --x='a b' c\ d "$HOME""#).expect("splits"),
            ["node", "my server.js", "--x=a b", "c d", "$HOME"]
        );
    }

    #[test]
    fn unterminated_quotes_trailing_backslash_and_empty_lines_are_refused() {
        for bad in ["node 'open", "node \"open", "node \\"] {
            assert!(split_command_line(bad).is_err(), "{bad}");
        }
        assert_eq!(
            StdioCommand::parse("  ").map(drop).expect_err("no program"),
            "the command line is empty"
        );
        let built = StdioCommand::parse("server --flag 'two words'")
            .expect("builds")
            .command();
        let std = built.as_std();
        assert_eq!(std.get_program(), "server");
        assert_eq!(std.get_args().collect::<Vec<_>>(), ["--flag", "two words"]);
    }
}
