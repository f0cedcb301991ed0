//! Reading a file argument, where `-` means stdin (as in cat, jq and cbt's `import`).

use std::io::Read;
use std::path::Path;

/// The path that stands for stdin.
pub const STDIN: &str = "-";

/// The bytes of `path`, or of stdin when it is `-`.
pub fn read_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    if path == Path::new(STDIN) {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes)?;
        Ok(bytes)
    } else {
        std::fs::read(path)
    }
}

/// The UTF-8 text of `path`, or of stdin when it is `-`.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// `path` as messages name it: `stdin` for `-`.
pub fn display_name(path: &Path) -> String {
    if path == Path::new(STDIN) {
        "stdin".to_string()
    } else {
        path.display().to_string()
    }
}
