use std::os::unix::fs::symlink;
use std::sync::Arc;

use gyre_tools::{ToolError, Workspace};
use serde_json::json;

use crate::Fixture;

#[test]
fn relative_and_absolute_paths_inside_resolve() {
    let fx = Fixture::new();
    let ws = Workspace::new(fx.root()).unwrap();
    fx.write("src/lib.rs", "x");
    let expected = fx.path("src/lib.rs");
    assert_eq!(ws.resolve("src/lib.rs").unwrap(), expected);
    assert_eq!(ws.resolve("./src/../src/lib.rs").unwrap(), expected);
    assert_eq!(ws.resolve(expected.to_str().unwrap()).unwrap(), expected);
    assert_eq!(ws.relative(&expected), "src/lib.rs");
}

#[test]
fn paths_outside_are_refused_with_a_clear_message() {
    let fx = Fixture::new();
    let ws = Workspace::new(fx.root()).unwrap();
    for path in ["../x", "/etc/passwd", "src/../../x", "/"] {
        let err = ws.resolve(path).unwrap_err();
        assert!(
            matches!(err, ToolError::OutsideWorkspace { .. }),
            "{path}: {err}"
        );
        let message = err.to_string();
        assert!(message.contains(path), "{message}");
        assert!(
            message.contains(&fx.root().display().to_string()),
            "{message}"
        );
        assert!(
            message.contains("use a path inside the workspace"),
            "{message}"
        );
    }
}

#[test]
fn symlinks_pointing_outside_are_refused() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    symlink(outside.path(), fx.path("dir_link")).unwrap();
    symlink(outside.path().join("secret"), fx.path("file_link")).unwrap();
    symlink(outside.path().join("not-yet"), fx.path("dangling")).unwrap();
    let ws = Workspace::new(fx.root()).unwrap();
    for path in [
        "dir_link/secret",
        "file_link",
        "dangling",
        "dir_link/new/file",
    ] {
        let err = ws.resolve(path).unwrap_err();
        assert!(
            matches!(err, ToolError::OutsideWorkspace { .. }),
            "{path}: {err}"
        );
    }
}

#[test]
fn symlinks_inside_resolve_to_their_target() {
    let fx = Fixture::new();
    fx.write("real/file.txt", "x");
    symlink(fx.path("real"), fx.path("alias")).unwrap();
    symlink(fx.path("real/new.txt"), fx.path("pending")).unwrap();
    let ws = Workspace::new(fx.root()).unwrap();
    assert_eq!(
        ws.resolve("alias/file.txt").unwrap(),
        fx.path("real/file.txt")
    );
    assert_eq!(ws.resolve("pending").unwrap(), fx.path("real/new.txt"));
}

#[tokio::test]
async fn tools_refuse_paths_outside_the_workspace() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    symlink(outside.path().join("secret"), fx.path("link")).unwrap();
    let calls = [
        ("read", json!({"file_path": "../x"})),
        ("read", json!({"file_path": "/etc/passwd"})),
        ("read", json!({"file_path": "link"})),
        ("write", json!({"file_path": "../x", "content": "no"})),
        ("write", json!({"file_path": "link", "content": "no"})),
        (
            "edit",
            json!({"file_path": "link", "old_string": "s", "new_string": "t"}),
        ),
        ("grep", json!({"pattern": "root", "path": "/etc"})),
        ("glob", json!({"pattern": "*", "path": ".."})),
        ("ls", json!({"path": "/etc"})),
    ];
    for (tool, args) in calls {
        let err = fx.err(tool, args.clone()).await;
        assert!(
            matches!(err, ToolError::OutsideWorkspace { .. }),
            "{tool} {args}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "s"
    );
}

#[test]
fn dot_dot_cannot_climb_out_even_through_real_directories() {
    let fx = Fixture::new();
    fx.write("a/b/c.txt", "x");
    let ws = Workspace::new(fx.root()).unwrap();
    assert_eq!(ws.resolve("a/b/../b/c.txt").unwrap(), fx.path("a/b/c.txt"));
    for path in ["a/b/../../../x", "a/../..", "./../x"] {
        let err = ws.resolve(path).unwrap_err();
        assert!(
            matches!(err, ToolError::OutsideWorkspace { .. }),
            "{path}: {err}"
        );
    }
    let root_name = fx.root().file_name().unwrap().to_str().unwrap();
    assert_eq!(
        ws.resolve(&format!("../{root_name}/a/b/c.txt")).unwrap(),
        fx.path("a/b/c.txt"),
        "climbing out and back in is inside"
    );
}

#[test]
fn extra_directories_are_allowed_and_canonical() {
    let fx = Fixture::new();
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("notes.md"), "n").unwrap();
    // Given through a symlink: stored canonical.
    let link_dir = tempfile::tempdir().unwrap();
    symlink(extra.path(), link_dir.path().join("alias")).unwrap();
    let ws = Workspace::with_extra_dirs(fx.root(), vec![link_dir.path().join("alias")]).unwrap();
    let canonical = canonical_path(extra.path());
    assert_eq!(ws.extra_dirs(), std::slice::from_ref(&canonical));
    let notes = canonical.join("notes.md");
    assert_eq!(ws.resolve(notes.to_str().unwrap()).unwrap(), notes);
    assert_eq!(
        ws.resolve(extra.path().join("new/file").to_str().unwrap())
            .unwrap(),
        canonical.join("new/file")
    );
    // Relative paths stay relative to the root.
    assert_eq!(ws.resolve("notes.md").unwrap(), fx.path("notes.md"));
    // Out of the extra directory is out.
    let above = extra.path().join("../elsewhere");
    let err = ws.resolve(above.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
    // A plain workspace has none.
    assert!(Workspace::new(fx.root()).unwrap().extra_dirs().is_empty());
}

fn canonical_path(path: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(path).unwrap()
}

#[test]
fn symlinks_out_of_an_extra_directory_are_refused() {
    let fx = Fixture::new();
    let extra = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    symlink(outside.path().join("secret"), extra.path().join("link")).unwrap();
    let ws = Workspace::with_extra_dirs(fx.root(), vec![extra.path().to_path_buf()]).unwrap();
    let err = ws
        .resolve(extra.path().join("link").to_str().unwrap())
        .unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err}");
}

#[test]
fn missing_or_file_extra_directories_are_errors() {
    let fx = Fixture::new();
    fx.write("file.txt", "x");
    assert!(Workspace::with_extra_dirs(fx.root(), vec![fx.path("missing")]).is_err());
    let err = Workspace::with_extra_dirs(fx.root(), vec![fx.path("file.txt")]).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotADirectory);
}

#[tokio::test]
async fn tools_work_in_extra_directories() {
    let mut fx = Fixture::new();
    let extra = tempfile::tempdir().unwrap();
    let file = canonical_path(extra.path()).join("shared.txt");
    std::fs::write(&file, "old\n").unwrap();
    fx.ctx.workspace =
        Arc::new(Workspace::with_extra_dirs(fx.root(), vec![extra.path().to_path_buf()]).unwrap());
    let path = file.to_str().unwrap();
    let text = fx.ok("read", json!({"file_path": path})).await;
    assert_eq!(text, "     1\told\n");
    fx.ok(
        "edit",
        json!({"file_path": path, "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
}
