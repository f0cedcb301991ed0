//! Human text or one JSON document per command, and error reporting.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
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

/// Progress on stderr by `indicatif`, shown only when stderr is a terminal (indicatif hides
/// it otherwise: nothing at all when piped) and not `-q`: a counter when the total is unknown
/// ([`Progress::new`]), a bar when it is known up front ([`Progress::with_total`]), redrawn at
/// most 10 times a second. The line is cleared by [`Progress::finish`] or on drop.
pub struct Progress {
    bar: ProgressBar,
    label: &'static str,
}

impl Progress {
    /// A counter of `label` (e.g. "rows").
    pub fn new(label: &'static str) -> Progress {
        Progress::drawn(ProgressBar::no_length(), "{pos} {msg}", label)
    }

    /// A bar of `total` items of `label`: `[#####-----]  50% 5/10 puts`.
    pub fn with_total(label: &'static str, total: u64) -> Progress {
        Progress::drawn(
            ProgressBar::new(total),
            "[{bar:30}] {percent:>3}% {pos}/{len} {msg}",
            label,
        )
    }

    fn drawn(bar: ProgressBar, template: &str, label: &'static str) -> Progress {
        let target = if verbosity() > Verbosity::Quiet {
            ProgressDrawTarget::stderr_with_hz(10)
        } else {
            ProgressDrawTarget::hidden()
        };
        // The templates are constants: a bad one is a bug, shown as the default style.
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("#-");
        bar.set_draw_target(target);
        let bar = bar
            .with_style(style)
            .with_message(label)
            .with_finish(ProgressFinish::AndClear);
        Progress { bar, label }
    }

    /// Counts one more item.
    pub fn tick(&mut self) {
        self.bar.inc(1);
        if self.bar.length() == Some(self.bar.position()) {
            // Draw the full bar now (a redraw between two frames would be skipped); `finish`
            // clears it.
            self.bar.finish();
        }
    }

    /// Shows `count` items and a `note` (e.g. "3 problems"), counted elsewhere (a machine's
    /// progress events).
    pub fn show(&mut self, count: u64, note: &str) {
        self.bar.set_position(count);
        self.bar.set_message(format!("{}, {note}", self.label));
    }

    /// Clears the line if anything was drawn.
    pub fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}
