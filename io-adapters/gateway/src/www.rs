//! Static files of the browser tool (`wasm/www`), served on every path outside `/v2/`: from the
//! files built into the binary, or from a directory (`--www DIR`, for development). When the
//! tool is not there (no files built in, or a directory without `index.html`), `/` is a
//! built-in page saying why. Paths are resolved inside the directory only: no `..`, no absolute or drive components, no hidden files, and a file
//! is served only if, with every link resolved, it still lies inside the (resolved) directory:
//! a link inside `--www` to `/etc/passwd` is not followed. They are
//! served without the bearer token, which guards the data API only: a browser loading the tool
//! cannot send one, and the page sends the token the user types on its data calls.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::EmbeddedFiles;

/// The page served at `/` when the browser tool is not there; `{why}` says why.
const BUILT_IN_INDEX: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>rowkit gateway</title></head>
<body>
<h1>rowkit gateway</h1>
<p>This gateway serves the Bigtable v2 JSON API at
<code>/v2/projects/{project}/instances/{instance}/tables/{table}:{method}</code>
(<code>readRows</code>, <code>mutateRow</code>, <code>mutateRows</code>,
<code>checkAndMutateRow</code>, <code>readModifyWriteRow</code>, <code>sampleRowKeys</code>).</p>
<p>The browser tool is not here: {why}. <code>rowkit serve</code> without <code>--www</code>
serves the tool built into rowkit (<code>wasm/www</code> of the workspace it was built from,
with its committed wasm package); <code>--www DIR</code> serves a directory holding the tool's
<code>index.html</code> and its package <code>pkg/</code> (built by <code>wasm/build.sh</code>).</p>
</body>
</html>
"#;

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "wasm" => "application/wasm",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" | "ts" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The path relative to the tool's root that `url_path` names (`index.html` for a directory),
/// if it is safe: plain names only, none hidden.
fn relative(url_path: &str) -> Option<PathBuf> {
    let relative = url_path.trim_start_matches('/');
    let relative = if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html")
    } else {
        relative.to_string()
    };
    let mut out = PathBuf::new();
    for c in Path::new(&relative).components() {
        match c {
            Component::Normal(part) if !part.to_string_lossy().starts_with('.') => out.push(part),
            _ => return None,
        }
    }
    Some(out)
}

/// The file under `root` that `url_path` names, if the path is safe.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    relative(url_path).map(|r| root.join(r))
}

/// `path` with every link resolved, if it is a file still inside `root` (resolved too).
async fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let root = tokio::fs::canonicalize(root).await.ok()?;
    let real = tokio::fs::canonicalize(path).await.ok()?;
    let hidden = real
        .strip_prefix(&root)
        .ok()?
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
    let file = tokio::fs::metadata(&real).await.ok()?.is_file();
    (file && !hidden).then_some(real)
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "not found\n",
    )
        .into_response()
}

/// The built-in page at `/` (saying `why` the tool is missing), 404 elsewhere.
fn missing_tool(url_path: &str, why: &str) -> Response {
    if url_path == "/" || url_path == "/index.html" {
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            BUILT_IN_INDEX.replace("{why}", why),
        )
            .into_response()
    } else {
        not_found()
    }
}

fn file(path: &Path, bytes: impl Into<Body>) -> Response {
    let mut response = bytes.into().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    response
}

/// Serves `url_path` from the files built into the binary, or the built-in page when there
/// are none.
pub(crate) fn serve_embedded(files: EmbeddedFiles, url_path: &str) -> Response {
    if files.is_empty() {
        return missing_tool(url_path, "this rowkit was built without it");
    }
    let Some(path) = relative(url_path) else {
        return not_found();
    };
    let find = |p: &Path| {
        files
            .iter()
            .find(|(name, _)| Path::new(name) == p)
            .map(|&(_, bytes)| bytes)
    };
    // A directory's name without the slash names its index page, as it does in a directory.
    let index = path.join("index.html");
    match find(&path)
        .map(|b| (path.as_path(), b))
        .or_else(|| find(&index).map(|b| (index.as_path(), b)))
    {
        Some((p, bytes)) => file(p, bytes),
        None => not_found(),
    }
}

/// Serves `url_path` from `root`; the built-in page at `/` when `root` has no `index.html`.
pub(crate) async fn serve(root: &Path, url_path: &str) -> Response {
    let Some(mut path) = resolve(root, url_path) else {
        return not_found();
    };
    if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
        path.push("index.html");
    }
    let Some(path) = inside(root, &path).await else {
        if !tokio::fs::try_exists(root.join("index.html"))
            .await
            .unwrap_or(false)
        {
            return missing_tool(url_path, "the directory given with --www has no index.html");
        }
        return not_found();
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => file(&path, bytes),
        Err(_) => not_found(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let root = Path::new("/srv/www");
        assert_eq!(
            resolve(root, "/"),
            Some(PathBuf::from("/srv/www/index.html"))
        );
        assert_eq!(
            resolve(root, "/pkg/rowkit_wasm_bg.wasm"),
            Some(PathBuf::from("/srv/www/pkg/rowkit_wasm_bg.wasm"))
        );
        assert_eq!(
            resolve(root, "/a/"),
            Some(PathBuf::from("/srv/www/a/index.html"))
        );
        for bad in [
            "/../etc/passwd",
            "/a/../../x",
            "/.git/config",
            "//etc/passwd/..",
        ] {
            assert_eq!(resolve(root, bad), None, "{bad}");
        }
        assert_eq!(content_type(Path::new("x.wasm")), "application/wasm");
    }

    #[test]
    fn embedded_files_are_found_by_their_path() {
        let files: EmbeddedFiles = &[("index.html", b"<h1>tool</h1>"), ("pkg/rowkit.js", b"js")];
        let status = |p: &str| serve_embedded(files, p).status();
        assert_eq!(status("/"), StatusCode::OK);
        assert_eq!(status("/pkg/rowkit.js"), StatusCode::OK);
        assert_eq!(
            serve_embedded(files, "/pkg/rowkit.js").headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        for missing in ["/pkg/", "/nope.js", "/../index.html", "/.hidden"] {
            assert_eq!(status(missing), StatusCode::NOT_FOUND, "{missing}");
        }
        assert_eq!(serve_embedded(&[], "/").status(), StatusCode::OK);
        assert_eq!(
            serve_embedded(&[], "/app.js").status(),
            StatusCode::NOT_FOUND
        );
    }
}
