//! MCP host configuration files (R-E4): reading any bytes never panics and stays bounded, and a
//! refusal's problem quotes none of the file; a key path, which names the file's own keys, is
//! bounded in what it shows.
#![no_main]

#[path = "host_file_check.rs"]
mod host_file_check;

use libfuzzer_sys::fuzz_target;
use skillcache::McpConfig;
use skillcache::error::{ConfigError, Error};

fuzz_target!(|data: &[u8]| {
    let path = host_file_check::scratch_file("mcp.json");
    std::fs::write(&path, data).expect("write the input");
    match McpConfig::read(&path) {
        Ok(config) => {
            // Every configured server is a usable origin: a visible label (R-E6).
            for (origin, _) in config.servers() {
                assert!(skillcache::Origin::new(origin.as_str()).is_ok());
            }
        }
        Err(Error::Config(ConfigError::File {
            field,
            problem,
            position,
            ..
        })) => {
            host_file_check::assert_quotes_nothing(data, &host_file_check::words(&problem));
            if let Some((line, column)) = position {
                assert!(line >= 1 && column >= 1);
                assert!(line <= data.iter().filter(|&&b| b == b'\n').count() + 1);
            }
            let shown = Error::Config(ConfigError::File {
                path: path.clone(),
                field: field.clone(),
                position,
                problem,
            })
            .to_string();
            // The key path is cut: a huge key is never printed whole.
            assert!(shown.len() < 2048, "{} bytes shown", shown.len());
        }
        Err(other) => panic!("a config file is refused as a config file: {other:?}"),
    }
});
