use std::os::unix::fs::symlink;

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
