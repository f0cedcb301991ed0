//! `rowkit key encode SCHEMA …` / `rowkit key decode --schema SCHEMA KEY`: a small dispatch to
//! each schema's module, which owns the logic.

use clap::Subcommand;
use rowkit_codec::escape;

use crate::error::CliError;
use crate::output::Output;

/// `rowkit key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Print the row keys (and more) a schema derives from its arguments.
    Encode {
        /// The schema (`graph`).
        schema: String,
        /// The schema's arguments (`graph`: G TRIPLE).
        args: Vec<String>,
    },
    /// Decode a row key of a schema.
    Decode {
        /// The schema (`graph`).
        #[arg(long)]
        schema: String,
        /// The key (escaped key text or `hex:…`).
        key: String,
    },
}

/// Runs one key command.
pub fn run(cmd: &KeyCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        KeyCommand::Encode { schema, args } => match schema.as_str() {
            "graph" => crate::graph::encode(args, out),
            other => Err(CliError::usage(format!("unknown schema {other:?}"))),
        },
        KeyCommand::Decode { schema, key } => {
            let key = escape::parse(key).map_err(|e| CliError::usage(e.to_string()))?;
            match schema.as_str() {
                "graph" => crate::graph::decode(&key, out),
                other => Err(CliError::usage(format!("unknown schema {other:?}"))),
            }
        }
    }
}
