//! The file-system seam: `read`, `write`, `edit` and `multi_edit` through a
//! `WorkspaceFs` (here an in-memory map standing for an editor's buffers)
//! keep the disk's rules: read before change, staleness by content, all or
//! nothing; the disk is untouched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use gyre_tools::{ToolError, WorkspaceFs};
use serde_json::json;

use crate::Fixture;

#[derive(Debug, Default)]
struct Buffers(Mutex<HashMap<PathBuf, String>>);

impl Buffers {
    fn set(&self, path: &Path, text: &str) {
        self.0
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), text.to_string());
    }

    fn get(&self, path: &Path) -> Option<String> {
        self.0.lock().unwrap().get(path).cloned()
    }
}

impl WorkspaceFs for Buffers {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move { self.get(path).ok_or_else(|| "not found".to_string()) })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.set(path, text);
            Ok(())
        })
    }
}

fn fixture() -> (Fixture, Arc<Buffers>, PathBuf) {
    let mut f = Fixture::new();
    f.write("a.txt", "on disk\n");
    let path = f.path("a.txt").canonicalize().unwrap();
    let buffers = Arc::new(Buffers::default());
    buffers.set(&path, "line one\nline two\n");
    f.ctx.fs = Some(buffers.clone());
    (f, buffers, path)
}

#[tokio::test]
async fn reads_and_edits_go_to_the_buffer_and_the_disk_is_untouched() {
    let (f, buffers, path) = fixture();
    let err = f
        .err(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"}),
        )
        .await;
    assert!(matches!(err, ToolError::NotReadYet { .. }), "{err}");
    let read = f.ok("read", json!({"file_path": "a.txt"})).await;
    assert!(
        read.contains("     1\tline one\n     2\tline two"),
        "{read}"
    );
    let edited = f
        .ok(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"}),
        )
        .await;
    assert!(
        edited.starts_with("edited a.txt: 1 replacement."),
        "{edited}"
    );
    f.ok(
        "multi_edit",
        json!({"file_path": "a.txt", "edits": [{"old_string": "two", "new_string": "2"}]}),
    )
    .await;
    assert_eq!(buffers.get(&path).unwrap(), "line 1\nline 2\n");
    assert_eq!(f.read("a.txt"), "on disk\n");
}

#[tokio::test]
async fn a_buffer_changed_since_it_was_read_is_stale_and_write_creates_new_files() {
    let (f, buffers, path) = fixture();
    f.ok("read", json!({"file_path": "a.txt", "offset": 2}))
        .await;
    buffers.set(&path, "the user typed\n");
    let err = f
        .err("write", json!({"file_path": "a.txt", "content": "x"}))
        .await;
    assert!(matches!(err, ToolError::Stale { .. }), "{err}");
    let created = f
        .ok(
            "write",
            json!({"file_path": "new.txt", "content": "fresh\n"}),
        )
        .await;
    assert!(created.starts_with("created new.txt"), "{created}");
    let new = f.root().canonicalize().unwrap().join("new.txt");
    assert_eq!(buffers.get(&new).unwrap(), "fresh\n");
    assert!(!f.path("new.txt").exists());
}
