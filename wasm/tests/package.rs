//! The committed packages (`wasm/www/pkg`, built into the rowkit binary, and the Node glue
//! `wasm/pkg-node`) are there and were built from the sources as they are: the `SOURCES`
//! fingerprint matches (a plain `cargo test` catches a change to rowkit-wasm or a crate it
//! depends on without a rebuild), and every built file is the one that build recorded (so a
//! commit cannot carry one package rebuilt and the other stale).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)]

#[path = "fingerprint/mod.rs"]
mod fingerprint;

use sha2::{Digest, Sha256};

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
    let sources_file =
        std::fs::read_to_string(root.join(fingerprint::SOURCES_FILE)).unwrap_or_default();
    // The file ends with the rustc that built the package (for CI's byte comparison) and the
    // sha256 of each file built (`built HASH  PATH`, PATH under wasm/, as sha256sum prints).
    let recorded: String = sources_file
        .lines()
        .filter(|l| !l.starts_with("rustc ") && !l.starts_with("built "))
        .map(|l| format!("{l}\n"))
        .collect();
    let built: Vec<(&str, &str)> = sources_file
        .lines()
        .filter_map(|l| l.strip_prefix("built ")?.split_once("  "))
        .collect();
    let built_files: Vec<&str> = built.iter().map(|(_, path)| *path).collect();
    assert_eq!(
        built_files,
        [
            "www/pkg/rowkit.js",
            "www/pkg/rowkit.d.ts",
            "www/pkg/rowkit_bg.wasm",
            "pkg-node/rowkit.js"
        ],
        "{}: the built files' hashes are missing: run wasm/build.sh",
        fingerprint::SOURCES_FILE
    );
    for (hash, path) in built {
        let bytes = std::fs::read(root.join("wasm").join(path)).unwrap();
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            hash,
            "wasm/{path} is not the file wasm/build.sh built with the rest: run wasm/build.sh \
             (and commit wasm/www/pkg and wasm/pkg-node)"
        );
    }
    assert!(
        recorded == now,
        "wasm/www/pkg is stale: run wasm/build.sh (and commit wasm/www/pkg)\n\
         --- recorded in {}\n{recorded}--- the sources now\n{now}",
        fingerprint::SOURCES_FILE
    );
}
