//! Diagnostic logging on stderr, through the `log` facade and `env_logger`.
//!
//! What is logged: registry endpoints and answers, each layer read (with its time),
//! cache hits and stores. Never a credential: requests are logged by their endpoint
//! and object, not their headers, and token or signed URLs are never printed.
//!
//! The level comes from `--log-level`, else `-v` (once: info, twice: debug, three
//! times: trace), else `RUST_LOG` (the `env_logger` syntax, which may also turn on
//! the logs of dependencies), else warnings only. The flags set this crate's level
//! only: the HTTP and TLS crates stay quiet unless `RUST_LOG` asks for them.

use std::io::Write;
use std::time::Instant;

use log::LevelFilter;

/// The module path prefix of this crate's log records.
const CRATE: &str = "mcd_inject";

/// What the command line asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogSettings {
    /// `--log-level`, when given.
    pub level: Option<LevelFilter>,
    /// How many times `-v` was given.
    pub verbose: u8,
}

impl LogSettings {
    /// The filter for this crate that the flags ask for; `None` leaves it to `RUST_LOG`.
    pub fn crate_level(&self) -> Option<LevelFilter> {
        self.level.or(match self.verbose {
            0 => None,
            1 => Some(LevelFilter::Info),
            2 => Some(LevelFilter::Debug),
            _ => Some(LevelFilter::Trace),
        })
    }
}

/// Installs the logger. Lines read `[  0.123s INFO  module] message`: seconds since
/// the start, so that a log shows where the time went.
pub fn init(settings: LogSettings) {
    let start = Instant::now();
    let mut builder = env_logger::Builder::new();
    match (settings.crate_level(), std::env::var("RUST_LOG")) {
        (Some(level), _) => {
            builder.filter_module(CRATE, level);
        }
        (None, Ok(spec)) if !spec.trim().is_empty() => {
            builder.parse_filters(&spec);
        }
        (None, _) => {
            builder.filter_module(CRATE, LevelFilter::Warn);
        }
    }
    builder
        .format(move |buf, record| {
            let t = start.elapsed();
            writeln!(
                buf,
                "[{:4}.{:03}s {:5} {}] {}",
                t.as_secs(),
                t.subsec_millis(),
                record.level(),
                record.module_path().unwrap_or(record.target()),
                record.args()
            )
        })
        .target(env_logger::Target::Stderr)
        .init();
}

/// `--log-level` values: off, error, warn, info, debug, trace.
pub fn parse_level(s: &str) -> Result<LevelFilter, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not a log level (off, error, warn, info, debug or trace)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_pick_the_level() {
        let s = |level, verbose| LogSettings { level, verbose };
        assert_eq!(s(None, 0).crate_level(), None);
        assert_eq!(s(None, 1).crate_level(), Some(LevelFilter::Info));
        assert_eq!(s(None, 2).crate_level(), Some(LevelFilter::Debug));
        assert_eq!(s(None, 5).crate_level(), Some(LevelFilter::Trace));
        let off = Some(LevelFilter::Off);
        assert_eq!(s(off, 3).crate_level(), off, "--log-level wins over -v");
    }

    #[test]
    fn levels_parse() {
        assert_eq!(parse_level("debug"), Ok(LevelFilter::Debug));
        assert_eq!(parse_level("WARN"), Ok(LevelFilter::Warn));
        assert!(parse_level("loud").unwrap_err().contains("loud"));
    }
}
