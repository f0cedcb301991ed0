//! Writes `wasm/www/pkg/SOURCES` for the sources as they are now: wasm/build.sh runs it after
//! building the package (see `tests/fingerprint`).

#[path = "../tests/fingerprint/mod.rs"]
mod fingerprint;

fn main() -> Result<(), String> {
    let root = fingerprint::workspace_root();
    let file = root.join(fingerprint::SOURCES_FILE);
    std::fs::write(&file, fingerprint::sources_file(&root)?)
        .map_err(|e| format!("{}: {e}", file.display()))
}
