//! `rowkit completions SHELL` and `rowkit man`: generated from the clap grammar, so they never
//! drift from what the parser accepts.

use clap::CommandFactory;

use crate::args::Cli;
use crate::error::CliError;

/// Prints the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "rowkit", &mut script);
    write_all(&script)
}

/// Prints the man page (roff, section 1) to stdout: synopsis, options, and the command groups
/// (each group's own options: `rowkit help GROUP`).
pub fn man_page() -> Result<(), CliError> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(CliError::Output)?;
    write_all(&page)
}

fn write_all(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Output)
}
