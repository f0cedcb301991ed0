//! Prints `wasm/www/pkg/SOURCES` for the sources as they are now: wasm/build.sh writes it next
//! to the package it built (see `tests/fingerprint`).

#[path = "../tests/fingerprint/mod.rs"]
mod fingerprint;

fn main() -> Result<(), String> {
    print!(
        "{}",
        fingerprint::sources_file(&fingerprint::workspace_root())?
    );
    Ok(())
}
