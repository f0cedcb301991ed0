//! Human text or one JSON document per command, and error reporting.

use std::io::{IsTerminal, Write};

use rowkit_codec::escape::escape;
use serde_json::{Value, json};

use crate::error::CliError;

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
        if matches!(e, CliError::Exit(_)) {
            return;
        }
        eprintln!("rowkit: {}", e.message());
        if self.json {
            println!(
                "{}",
                json!({"error": {"id": e.id(), "message": e.message()}})
            );
        }
    }
}

/// A key (or qualifier, or value) as JSON: escaped text and lowercase hex side by side, under
/// `NAME` and `NAME_hex`.
pub fn bytes_fields(map: &mut serde_json::Map<String, Value>, name: &str, bytes: &[u8]) {
    map.insert(name.to_string(), Value::String(escape(bytes)));
    map.insert(format!("{name}_hex"), Value::String(hex::encode(bytes)));
}

/// A progress counter on stderr, shown only when stderr is a terminal.
pub struct Progress {
    enabled: bool,
    label: &'static str,
    count: u64,
}

impl Progress {
    /// A counter of `label` (e.g. "rows").
    pub fn new(label: &'static str) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            label,
            count: 0,
        }
    }

    /// Counts one more item, redrawing now and then.
    pub fn tick(&mut self) {
        self.count += 1;
        if self.enabled && self.count.is_multiple_of(1000) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{} {}", self.count, self.label);
            let _ = err.flush();
        }
    }

    /// Clears the line.
    pub fn finish(&self) {
        if self.enabled && self.count >= 1000 {
            eprint!("\r\x1b[2K");
        }
    }
}
