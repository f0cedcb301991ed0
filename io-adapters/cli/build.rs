//! Builds the browser tool into the `rowkit` binary: every file of `wasm/www` (the page, its
//! view modules and the committed wasm package `pkg/`) becomes an `include_bytes!` entry of
//! `$OUT_DIR/www_files.rs`, so an installed `rowkit serve` serves the tool from anywhere with
//! no build step beyond cargo's. Hidden files are left out, as the gateway never serves them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every non-hidden file under `dir`, as (path relative to `root` with `/`, absolute path).
fn files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            files(root, &path, out)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((name, path));
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let www = manifest.join("../../wasm/www");
    // A directory: cargo rebuilds when anything under it changes.
    println!("cargo::rerun-if-changed={}", www.display());
    let mut found = Vec::new();
    if www.is_dir() {
        let www = std::fs::canonicalize(&www)?;
        files(&www, &www, &mut found)?;
    }
    found.sort();
    let mut code = String::from(
        "/// The browser tool's files (`wasm/www` when rowkit was built): path, bytes.\n\
         pub static WWW_FILES: rowkit_gateway::EmbeddedFiles = &[\n",
    );
    for (name, path) in &found {
        let _ = writeln!(
            code,
            "    ({name:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    std::fs::write(out.join("www_files.rs"), code)
}
