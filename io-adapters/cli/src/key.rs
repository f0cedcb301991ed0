//! `rowkit key encode|decode`: the dispatch to each schema's key module.

use clap::Subcommand;

use crate::error::CliError;
use crate::output::Output;

/// `rowkit key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Build a row key from its parts.
    #[command(subcommand)]
    Encode(EncodeSchema),
    /// Take a row key apart.
    Decode {
        /// Which schema: `auto` or `s3`.
        #[arg(long, default_value = "auto")]
        schema: String,
        /// The row key (escaped key text or `hex:…`).
        key: String,
    },
}

/// `rowkit key encode SCHEMA …`.
#[derive(Debug, Subcommand)]
pub enum EncodeSchema {
    /// An objmeta row key.
    S3(crate::s3::EncodeArgs),
}

/// Runs a key command.
pub fn run(cmd: &KeyCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        KeyCommand::Encode(EncodeSchema::S3(a)) => crate::s3::key_encode(a, out),
        KeyCommand::Decode { schema, key } => match schema.as_str() {
            "s3" | "auto" => crate::s3::key_decode(key, out),
            other => Err(CliError::usage(format!("unknown schema {other:?}"))),
        },
    }
}
