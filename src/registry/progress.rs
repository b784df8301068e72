//! Download progress on stderr: a bar on a terminal, periodic plain lines elsewhere
//! (CI logs), nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// A line every few seconds (stderr is a file or pipe).
    Lines,
    /// Nothing.
    Quiet,
}

impl ProgressMode {
    /// Bar or lines depending on what stderr is, or nothing when `quiet`.
    pub fn detect(quiet: bool) -> Self {
        if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bar
        } else {
            ProgressMode::Lines
        }
    }
}

const BAR_INTERVAL: Duration = Duration::from_millis(150);
const LINE_INTERVAL: Duration = Duration::from_secs(5);
const BAR_WIDTH: u64 = 30;

/// Progress of one blob download.
pub struct Progress {
    mode: ProgressMode,
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    last: Option<Instant>,
}

fn mb(n: u64) -> f64 {
    n as f64 / 1_000_000.0
}

impl Progress {
    pub fn new(mode: ProgressMode, label: String, total: u64) -> Self {
        let p = Progress {
            mode,
            label,
            total,
            done: 0,
            started: Instant::now(),
            last: None,
        };
        if mode == ProgressMode::Lines {
            eprintln!("fetching {} ({:.1} MB)", p.label, mb(total));
        }
        p
    }

    /// Records `n` more bytes.
    pub fn advance(&mut self, n: u64) {
        self.done += n;
        let interval = match self.mode {
            ProgressMode::Quiet => return,
            ProgressMode::Bar => BAR_INTERVAL,
            ProgressMode::Lines => LINE_INTERVAL,
        };
        let now = Instant::now();
        if self.last.is_some_and(|l| now.duration_since(l) < interval)
            || self.last.is_none() && now.duration_since(self.started) < interval
        {
            return;
        }
        self.last = Some(now);
        self.draw(false);
    }

    /// Notes a retry or resume, which the user should see even on a terminal.
    pub fn note(&self, message: &str) {
        match self.mode {
            ProgressMode::Quiet => {}
            ProgressMode::Bar => eprintln!("\r\x1b[K{message}"),
            ProgressMode::Lines => eprintln!("{message}"),
        }
    }

    /// Ends the display of this blob.
    pub fn finish(&mut self) {
        if self.mode != ProgressMode::Quiet {
            self.draw(true);
        }
    }

    fn percent(&self) -> u64 {
        (self.done * 100).checked_div(self.total).unwrap_or(100)
    }

    fn draw(&self, last: bool) {
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let rate = mb(self.done) / secs;
        let mut err = std::io::stderr().lock();
        let _ = match self.mode {
            ProgressMode::Quiet => Ok(()),
            ProgressMode::Bar => {
                let filled = (self.percent().min(100) * BAR_WIDTH / 100) as usize;
                write!(
                    err,
                    "\r\x1b[K{} [{}{}] {:.1}/{:.1} MB {:.0} MB/s{}",
                    self.label,
                    "#".repeat(filled),
                    " ".repeat(BAR_WIDTH as usize - filled),
                    mb(self.done),
                    mb(self.total),
                    rate,
                    if last { "\n" } else { "" }
                )
            }
            ProgressMode::Lines => writeln!(
                err,
                "{} {}% ({:.1}/{:.1} MB, {:.0} MB/s){}",
                self.label,
                self.percent(),
                mb(self.done),
                mb(self.total),
                rate,
                if last { ", done" } else { "" }
            ),
        };
        let _ = err.flush();
    }
}
