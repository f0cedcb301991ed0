//! The CLI's errors and how they map to exit codes and stable ids.

use rowkit_statemachines::{Code, StoreError};

/// A failed command.
#[derive(Debug)]
pub enum CliError {
    /// Bad usage or bad input (exit 2).
    Usage(String),
    /// The operation failed (exit 1), or a store rejected input (exit 2 for INVALID_ARGUMENT).
    Store(StoreError),
    /// A schema operation failed with a stable id (exit 1, or 2 when the input was bad).
    Op {
        /// Stable id (e.g. `v.io/v23/naming.nameDoesntExist`).
        id: String,
        /// Message.
        message: String,
        /// Exit code.
        exit: u8,
    },
}

impl CliError {
    /// A bad-usage error.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }

    /// 2 for bad usage or input, 1 for a failed operation.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Store(e) if matches!(e.code, Code::InvalidArgument | Code::OutOfRange) => 2,
            CliError::Store(_) => 1,
            CliError::Op { exit, .. } => *exit,
        }
    }

    /// A stable machine-readable id: `usage`, or the status name in lower case (`not_found`).
    pub fn id(&self) -> String {
        match self {
            CliError::Usage(_) => "usage".to_string(),
            CliError::Store(e) => e.code.name().to_ascii_lowercase(),
            CliError::Op { id, .. } => id.clone(),
        }
    }

    /// The one-line message.
    pub fn message(&self) -> String {
        match self {
            CliError::Usage(m) => m.clone(),
            CliError::Store(e) => format!("{}: {}", e.code, e.message),
            CliError::Op { message, .. } => message.clone(),
        }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> CliError {
        CliError::Store(e)
    }
}
