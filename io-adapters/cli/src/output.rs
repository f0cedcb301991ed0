//! Human text or one JSON document per command, and error reporting.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rowkit_codec::escape::escape;
use serde_json::{Value, json};

use crate::error::CliError;

/// How much a command says on stderr beside its results and errors (`-q`, `-v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// `-q`: no progress, no informational lines.
    Quiet = 0,
    /// The default.
    Normal = 1,
    /// `-v`: details as well ([`detail`]).
    Verbose = 2,
}

/// Set once by `main` from the flags; read wherever stderr is written (progress is drawn far
/// from the `Output` of a command, so this is process-wide, as stderr itself is).
static VERBOSITY: AtomicU8 = AtomicU8::new(Verbosity::Normal as u8);

/// Sets the process's [`Verbosity`].
pub fn set_verbosity(verbosity: Verbosity) {
    VERBOSITY.store(verbosity as u8, Ordering::Relaxed);
}

/// The process's [`Verbosity`].
pub fn verbosity() -> Verbosity {
    match VERBOSITY.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        2 => Verbosity::Verbose,
        _ => Verbosity::Normal,
    }
}

/// Where informational lines go: stderr, or nowhere with `-q`.
pub fn info_stream() -> Box<dyn Write> {
    if verbosity() == Verbosity::Quiet {
        Box::new(std::io::sink())
    } else {
        Box::new(std::io::stderr())
    }
}

/// One `rowkit: …` line of detail on stderr, only with `-v`.
pub fn detail(text: std::fmt::Arguments<'_>) {
    if verbosity() == Verbosity::Verbose {
        let _ = writeln!(std::io::stderr(), "rowkit: {text}");
    }
}

/// Where results go: text lines, or JSON with stable field names.
pub struct Output {
    json: bool,
}

impl Output {
    /// Output in JSON when `json` is set.
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    /// Whether JSON was asked for.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Reports a failed command: one line on stderr, plus the JSON error document on stdout.
    pub fn error(&self, e: &CliError) {
        if e.is_silent() {
            return;
        }
        // Where stderr or stdout is closed too there is nobody left to tell.
        let _ = if verbosity() == Verbosity::Verbose {
            writeln!(std::io::stderr(), "rowkit: {} [{}]", e.message(), e.id())
        } else {
            writeln!(std::io::stderr(), "rowkit: {}", e.message())
        };
        if self.json {
            self.error_document(e);
        }
    }

    /// The JSON error document on stdout: `{"error":{"id","message"}}`.
    pub fn error_document(&self, e: &CliError) {
        let doc = json!({"error": {"id": e.id(), "message": e.message()}});
        let _ = writeln!(std::io::stdout(), "{doc}");
    }
}

/// `println!` for a command's results: a closed stdout returns [`CliError::Output`] from the
/// calling function (the command then ends quietly) where `println!` would panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// Writes `text` to stdout (see [`outln!`]).
pub fn write_stdout(text: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    std::io::stdout()
        .lock()
        .write_fmt(text)
        .map_err(CliError::Output)
}

/// A key (or qualifier, or value) as JSON: escaped text and lowercase hex side by side, under
/// `NAME` and `NAME_hex`.
pub fn bytes_fields(map: &mut serde_json::Map<String, Value>, name: &str, bytes: &[u8]) {
    map.insert(name.to_string(), Value::String(escape(bytes)));
    map.insert(format!("{name}_hex"), Value::String(hex::encode(bytes)));
}

/// A decoded key's fields as text, one `name: value` a line: strings unquoted, and without
/// what only JSON needs (the `_hex` twins and the `schema` tag).
pub fn write_fields(doc: &serde_json::Map<String, Value>) -> Result<(), CliError> {
    for (name, value) in doc {
        if name.ends_with("_hex") || name == "schema" {
            continue;
        }
        match value {
            Value::String(text) => outln!("{name}: {text}"),
            other => outln!("{name}: {other}"),
        }
    }
    Ok(())
}

/// Progress on stderr, shown only when stderr is a terminal and not `-q` (nothing at all when
/// piped): a
/// counter when the total is unknown ([`Progress::new`]), a bar when it is known up front
/// ([`Progress::with_total`]). The line is cleared by [`Progress::finish`] or on drop.
pub struct Progress {
    enabled: bool,
    label: &'static str,
    count: u64,
    total: Option<u64>,
    /// When the bar was last drawn (`None`: not yet).
    drawn_at: Option<Instant>,
}

/// The bar is redrawn at most this often (10 times a second).
const BAR_REDRAW: Duration = Duration::from_millis(100);

/// Characters between the bar's brackets.
const BAR_WIDTH: u64 = 30;

impl Progress {
    /// A counter of `label` (e.g. "rows"), redrawn every 1 000 items.
    pub fn new(label: &'static str) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal() && verbosity() > Verbosity::Quiet,
            label,
            count: 0,
            total: None,
            drawn_at: None,
        }
    }

    /// A bar of `total` items of `label`, drawn at the first item, at the last, and in between
    /// at most every [`BAR_REDRAW`].
    pub fn with_total(label: &'static str, total: u64) -> Progress {
        Progress {
            total: Some(total),
            ..Progress::new(label)
        }
    }

    /// Counts one more item, redrawing now and then.
    pub fn tick(&mut self) {
        self.count += 1;
        if !self.enabled {
            return;
        }
        let text = match self.total {
            None if self.count.is_multiple_of(1000) => format!("\r{} {}", self.count, self.label),
            None => return,
            Some(total) => {
                let due = self.count >= total
                    || self.drawn_at.is_none_or(|at| at.elapsed() >= BAR_REDRAW);
                if !due {
                    return;
                }
                bar_text(self.count, total, self.label)
            }
        };
        self.drawn_at = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{text}");
        let _ = err.flush();
    }

    /// Shows `count` items and a `note` (e.g. "3 problems"), counted elsewhere (a machine's
    /// progress events), redrawn at most every [`BAR_REDRAW`].
    pub fn show(&mut self, count: u64, note: &str) {
        self.count = count;
        if !self.enabled || self.drawn_at.is_some_and(|at| at.elapsed() < BAR_REDRAW) {
            return;
        }
        self.drawn_at = Some(Instant::now());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{count} {}, {note}", self.label);
        let _ = err.flush();
    }

    /// Clears the line if anything was drawn.
    pub fn finish(&mut self) {
        if self.enabled && self.drawn_at.take().is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One frame of the bar: `\r[#####-----]  50% 5/10 puts`.
fn bar_text(count: u64, total: u64, label: &str) -> String {
    let done = count.min(total);
    let (filled, percent) = match total {
        0 => (BAR_WIDTH, 100),
        _ => (done * BAR_WIDTH / total, done * 100 / total),
    };
    format!(
        "\r[{}{}] {percent:>3}% {count}/{total} {label}",
        "#".repeat(filled as usize),
        "-".repeat((BAR_WIDTH - filled) as usize)
    )
}

#[cfg(test)]
mod tests {
    use super::bar_text;

    #[test]
    fn bar_frames() {
        // (count, total, filled of 30, the text after the bar)
        let cases = [
            (0, 10, 0, "   0% 0/10 puts"),
            (5, 10, 15, "  50% 5/10 puts"),
            (1, 3, 10, "  33% 1/3 puts"),
            (3, 3, 30, " 100% 3/3 puts"),
        ];
        for (count, total, filled, tail) in cases {
            let bar = format!("{}{}", "#".repeat(filled), "-".repeat(30 - filled));
            assert_eq!(bar_text(count, total, "puts"), format!("\r[{bar}]{tail}"));
        }
    }
}
