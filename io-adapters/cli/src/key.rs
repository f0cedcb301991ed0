//! `rowkit key encode|decode`: row keys of every schema. Each schema's logic lives in its own
//! module; this file only dispatches.

use clap::{Subcommand, ValueEnum};

use crate::error::CliError;
use crate::output::Output;

/// `rowkit key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Print the row key of a schema object.
    #[command(subcommand)]
    Encode(EncodeCommand),
    /// Explain a row key (escaped key text or `hex:…`).
    Decode {
        /// Which schema's layout to use.
        #[arg(long, value_enum, default_value_t = Schema::Auto)]
        schema: Schema,
        /// The key.
        key: String,
    },
}

/// `rowkit key encode SCHEMA …`.
#[derive(Debug, Subcommand)]
pub enum EncodeCommand {
    /// A mount table node: `rowkit key encode mt NAME`.
    Mt {
        /// Node name (relative to the root; `""` is the root).
        name: String,
    },
}

/// Schemas `key decode` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Schema {
    /// Try every schema.
    Auto,
    /// Mount table.
    Mt,
}

/// Runs one key command.
pub fn run(cmd: &KeyCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        KeyCommand::Encode(EncodeCommand::Mt { name }) => crate::mt::key_encode(name, out),
        KeyCommand::Decode { schema, key } => {
            let bytes = rowkit_codec::escape::parse(key)
                .map_err(|e| CliError::usage(format!("bad key {key:?}: {e}")))?;
            match schema {
                Schema::Mt | Schema::Auto => crate::mt::key_decode(&bytes, out),
            }
        }
    }
}
