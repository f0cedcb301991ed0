//! The CLI's errors and how they map to exit codes and stable ids.

use rowkit_statemachines::operation::OperationError;
use rowkit_statemachines::{Code, StoreError};

/// A failed command.
#[derive(Debug)]
pub enum CliError {
    /// Bad usage or bad input (exit 2).
    Usage(String),
    /// The operation failed (exit 1), or a store rejected input (exit 2 for INVALID_ARGUMENT).
    Store(StoreError),
    /// Exit with this code after output was printed, with no error message (e.g. `exist`
    /// answering "absent").
    Exit(u8),
    /// Writing the output failed. A closed pipe (`rowkit … | head`) ends the command quietly
    /// with exit 0, as ripgrep does: the reader has all it wanted.
    Output(std::io::Error),
    /// A schema operation's own error, with its stable id and exit code.
    Schema {
        /// Stable id (`bad_repo_index`, …).
        id: String,
        /// The message.
        message: String,
        /// 1 or 2.
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
            CliError::Exit(code) => *code,
            CliError::Output(e) if is_closed_pipe(e) => 0,
            CliError::Output(_) => 1,
            CliError::Schema { exit, .. } => *exit,
        }
    }

    /// Whether the command ends without a message (it already said what it had to, or its
    /// reader went away).
    pub fn is_silent(&self) -> bool {
        match self {
            CliError::Exit(_) => true,
            CliError::Output(e) => is_closed_pipe(e),
            _ => false,
        }
    }

    /// A stable machine-readable id: `usage`, or the status name in lower case (`not_found`).
    pub fn id(&self) -> String {
        match self {
            CliError::Usage(_) => "usage".to_string(),
            CliError::Store(e) => e.code.name().to_ascii_lowercase(),
            CliError::Exit(_) => "exit".to_string(),
            CliError::Output(_) => "output".to_string(),
            CliError::Schema { id, .. } => id.clone(),
        }
    }

    /// The one-line message.
    pub fn message(&self) -> String {
        match self {
            CliError::Usage(m) => m.clone(),
            CliError::Store(e) => format!("{}: {}", e.code, e.message),
            CliError::Exit(_) => String::new(),
            CliError::Output(e) => format!("writing output: {e}"),
            CliError::Schema { message, .. } => message.clone(),
        }
    }
}

impl CliError {
    /// A schema operation's error, every schema's the same way: a store error as its status,
    /// anything else under the schema's id, exit 2 for refused input, else 1.
    pub fn operation(e: impl OperationError) -> CliError {
        if let Some(store) = e.as_store() {
            return CliError::Store(store.clone());
        }
        CliError::Schema {
            id: e.id().to_string(),
            message: e.to_string(),
            exit: if e.is_bad_input() { 2 } else { 1 },
        }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> CliError {
        CliError::Store(e)
    }
}

/// Whether writing failed because the reader closed the pipe.
fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}
