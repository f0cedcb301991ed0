//! The committed browser package (`wasm/www/pkg`, built into the rowkit binary) is there and
//! was built from the sources as they are: its `SOURCES` fingerprint matches (a plain `cargo
//! test` catches a change to rowkit-wasm or a crate it depends on without a rebuild).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

#[path = "fingerprint/mod.rs"]
mod fingerprint;

#[test]
fn the_committed_browser_package_is_fresh() {
    let root = fingerprint::workspace_root();
    for file in ["rowkit.js", "rowkit_bg.wasm", "rowkit.d.ts"] {
        assert!(
            root.join("wasm/www/pkg").join(file).is_file(),
            "wasm/www/pkg/{file} is missing: run wasm/build.sh"
        );
    }
    let now = fingerprint::sources_file(&root).unwrap();
    // The file ends with the rustc that built the package (for CI's byte comparison).
    let recorded: String = std::fs::read_to_string(root.join(fingerprint::SOURCES_FILE))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("rustc "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        recorded == now,
        "wasm/www/pkg is stale: run wasm/build.sh (and commit wasm/www/pkg)\n\
         --- recorded in {}\n{recorded}--- the sources now\n{now}",
        fingerprint::SOURCES_FILE
    );
}
