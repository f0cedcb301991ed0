//! `rowkit key encode|decode`: row keys of every schema. Each schema's logic lives in its own
//! module; this file only dispatches.

use clap::Subcommand;
use rowkit_codec::escape;
use serde_json::{Map, Value};

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
        /// `auto` (try every schema) or a schema name: `gold`, `s3`, `graph`, `mt`.
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
    /// BadWolf triple store: `graph G TRIPLE` prints the four index rows and their cells.
    Graph {
        /// Graph id and triple text.
        #[arg(num_args = 2, value_names = ["G", "TRIPLE"])]
        args: Vec<String>,
    },
    /// An object-metadata (S3) row key.
    S3(crate::s3::EncodeArgs),
    /// A mount table node row key: `mt NAME`.
    Mt {
        /// The name (cleaned as btmtd does).
        name: String,
    },
}

/// Runs one `key` command.
pub fn run(cmd: &KeyCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        KeyCommand::Encode {
            schema: EncodeSchema::Gold(c),
        } => gold::encode_key(c, out),
        KeyCommand::Encode {
            schema: EncodeSchema::Graph { args },
        } => crate::graph::encode(args, out),
        KeyCommand::Encode {
            schema: EncodeSchema::S3(a),
        } => crate::s3::key_encode(a, out),
        KeyCommand::Encode {
            schema: EncodeSchema::Mt { name },
        } => crate::mt::key_encode(name, out),
        KeyCommand::Decode { schema, key } => {
            let bytes =
                escape::parse(key).map_err(|e| CliError::usage(format!("key {key:?}: {e}")))?;
            match schema.as_str() {
                "gold" => print_gold(gold::decode_key(&bytes), key, out),
                "graph" => crate::graph::decode(&bytes, out),
                "s3" => crate::s3::key_decode(key, out),
                "mt" => crate::mt::key_decode(&bytes, out),
                // Each decoder prints only on success, so trying them in turn is safe.
                "auto" => match gold::decode_key(&bytes) {
                    Some(doc) => print_gold(Some(doc), key, out),
                    None => crate::s3::key_decode(key, out)
                        .or_else(|_| crate::graph::decode(&bytes, out))
                        // Last: any key of 9+ bytes reads as a mount table node (its hash check
                        // is reported), so it must not shadow the stricter decoders.
                        .or_else(|_| crate::mt::key_decode(&bytes, out))
                        .map_err(|_| CliError::Schema {
                            id: "unknown_row_key".into(),
                            message: format!("{key:?} is not a row key of any known schema"),
                            exit: 2,
                        }),
                },
                other => Err(CliError::usage(format!(
                    "--schema {other}: unknown schema (auto, gold, s3, graph, mt)"
                ))),
            }
        }
    }
}

fn print_gold(
    decoded: Option<Map<String, Value>>,
    key: &str,
    out: &Output,
) -> Result<(), CliError> {
    let Some(doc) = decoded else {
        return Err(CliError::Schema {
            id: "not_a_gold_row_key".into(),
            message: format!("{key:?} is not a gold row key"),
            exit: 2,
        });
    };
    if out.is_json() {
        outln!("{}", Value::Object(doc));
    } else {
        crate::output::write_fields(&doc)?;
    }
    Ok(())
}
