//! `rowkit key encode|decode`: row keys of every schema. Each schema's logic lives in its own
//! module; this file only dispatches.

use clap::Subcommand;
use serde_json::Value;

use crate::error::CliError;
use crate::gold;
use crate::output::Output;

/// `rowkit key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Build a schema's row key.
    Encode {
        /// The schema.
        #[command(subcommand)]
        schema: EncodeSchema,
    },
    /// Explain any row key.
    Decode {
        /// `auto` or a schema name (`gold`).
        #[arg(long, default_value = "auto")]
        schema: String,
        /// The key (escaped key text or `hex:…`).
        key: String,
    },
}

/// The schemas `key encode` knows.
#[derive(Debug, Subcommand)]
pub enum EncodeSchema {
    /// Gold trace store keys.
    #[command(subcommand)]
    Gold(gold::GoldKeyCommand),
}

/// Runs one `key` command.
pub fn run(cmd: &KeyCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        KeyCommand::Encode {
            schema: EncodeSchema::Gold(c),
        } => gold::encode_key(c, out),
        KeyCommand::Decode { schema, key } => {
            let bytes = gold::parse_key(key)?;
            let decoded = match schema.as_str() {
                "auto" | "gold" => gold::decode_key(&bytes),
                other => return Err(CliError::usage(format!("--schema {other}: unknown schema"))),
            };
            let Some(doc) = decoded else {
                return Err(CliError::Schema {
                    id: "not_a_gold_row_key".into(),
                    message: format!("{key:?} is not a gold row key"),
                    exit: 2,
                });
            };
            if out.is_json() {
                println!("{}", Value::Object(doc));
            } else {
                for (k, v) in doc {
                    println!("{k}: {v}");
                }
            }
            Ok(())
        }
    }
}
