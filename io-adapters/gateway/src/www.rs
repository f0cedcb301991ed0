//! Static files of the browser tool (`wasm/www`), served on every path outside `/v2/`. Without
//! a directory, `/` is a built-in page saying how to build the tool. Paths are resolved inside
//! the directory only: no `..`, no absolute or drive components, no hidden files, and a file
//! is served only if, with every link resolved, it still lies inside the (resolved) directory:
//! a link inside `--www` to `/etc/passwd` is not followed. They are
//! served without the bearer token, which guards the data API only: a browser loading the tool
//! cannot send one, and the page sends the token the user types on its data calls.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The page served at `/` when no `--www` directory is available.
const BUILT_IN_INDEX: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>rowkit gateway</title></head>
<body>
<h1>rowkit gateway</h1>
<p>This gateway serves the Bigtable v2 JSON API at
<code>/v2/projects/{project}/instances/{instance}/tables/{table}:{method}</code>
(<code>readRows</code>, <code>mutateRow</code>, <code>mutateRows</code>,
<code>checkAndMutateRow</code>, <code>readModifyWriteRow</code>, <code>sampleRowKeys</code>).</p>
<p>The browser tool is not built. Build it (see <code>wasm/README.md</code>) so that
<code>wasm/www/</code> exists, then restart <code>rowkit serve</code> from the workspace, or pass
<code>--www DIR</code>.</p>
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

/// The file under `root` that `url_path` names, if the path is safe.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let relative = url_path.trim_start_matches('/');
    let relative = if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html")
    } else {
        relative.to_string()
    };
    let mut out = root.to_path_buf();
    for c in Path::new(&relative).components() {
        match c {
            Component::Normal(part) if !part.to_string_lossy().starts_with('.') => out.push(part),
            _ => return None,
        }
    }
    Some(out)
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

/// Serves `url_path` from `root`, or the built-in page.
pub(crate) async fn serve(root: Option<&Path>, url_path: &str) -> Response {
    let Some(root) = root else {
        return if url_path == "/" || url_path == "/index.html" {
            (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                BUILT_IN_INDEX,
            )
                .into_response()
        } else {
            not_found()
        };
    };
    let Some(mut path) = resolve(root, url_path) else {
        return not_found();
    };
    if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
        path.push("index.html");
    }
    let Some(path) = inside(root, &path).await else {
        return not_found();
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => {
            let mut response = Body::from(bytes).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(&path)),
            );
            response
        }
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
}
