//! The fingerprint of the sources the committed browser package (`wasm/www/pkg`) is built from:
//! sha256 over every workspace crate rowkit-wasm depends on (itself included: `Cargo.toml`,
//! `build.rs`, `src/`), the workspace's `Cargo.toml` (profiles) and `Cargo.lock`, and
//! `wasm/build.sh`. One implementation for the example that writes `wasm/www/pkg/SOURCES`
//! (run by wasm/build.sh after a build) and the test that checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where `wasm/www/pkg/SOURCES` is, relative to the workspace root.
pub const SOURCES_FILE: &str = "wasm/www/pkg/SOURCES";

/// The workspace root (rowkit-wasm lives in `wasm/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace crates rowkit-wasm depends on through path dependencies (normal and build,
/// on any target), itself included: name -> directory, from `cargo metadata --no-deps`.
fn crates(root: &Path) -> Result<BTreeMap<String, PathBuf>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"))
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let packages: BTreeMap<&str, &serde_json::Value> = doc["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["name"].as_str()?, p)))
        .collect();
    let mut found = BTreeMap::new();
    let mut next = vec!["rowkit-wasm"];
    while let Some(name) = next.pop() {
        let Some(package) = packages.get(name) else {
            return Err(format!("{name} is not a workspace package"));
        };
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
        let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
        if found.insert(name.to_string(), dir).is_some() {
            continue;
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            if dep["path"].is_string() && dep["kind"].as_str() != Some("dev") {
                next.extend(dep["name"].as_str());
            }
        }
    }
    Ok(found)
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut BTreeSet<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            files_under(&path, out)?;
        } else {
            out.insert(path);
        }
    }
    Ok(())
}

/// The text of `wasm/www/pkg/SOURCES` for the sources as they are now.
pub fn sources_file(root: &Path) -> Result<String, String> {
    let root = std::fs::canonicalize(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let crates = crates(&root)?;
    let mut files = BTreeSet::new();
    for name in ["Cargo.toml", "Cargo.lock", "wasm/build.sh"] {
        files.insert(root.join(name));
    }
    for dir in crates.values() {
        for name in ["Cargo.toml", "build.rs"] {
            if dir.join(name).is_file() {
                files.insert(dir.join(name));
            }
        }
        files_under(&dir.join("src"), &mut files)?;
    }
    // Paths relative to the root with `/`, sorted: the same on every machine.
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let relative = p.strip_prefix(&root).unwrap_or(&p);
            let name = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            (name, p)
        })
        .collect();
    named.sort();
    let mut hash = Sha256::new();
    for (name, path) in &named {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(format!(
        "# The sources wasm/www/pkg was built from by wasm/build.sh; `cargo test -p rowkit-wasm \
         --test package` recomputes this.\nsha256 {}\nfiles {}\ncrates {}\n",
        hex::encode(hash.finalize()),
        named.len(),
        crates.keys().cloned().collect::<Vec<_>>().join(" "),
    ))
}
