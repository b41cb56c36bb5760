//! The editor's buffers as gyre's file-system seam
//! ([`gyre_tools::WorkspaceFs`]): `read`, `write`, `edit` and `multi_edit`
//! go through `fs/read_text_file` and `fs/write_text_file` when the editor
//! offers both, so the model reads what the user sees (unsaved changes
//! included) and its edits land in the editor.
//!
//! Invariants: used only when the client advertised both `fs` methods
//! (half of the pair would let reads and writes diverge); each request is
//! bounded in time ([`FS_WAIT`]); an error is one sentence the tool turns
//! into its result (the run goes on).

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use agent_client_protocol::{Client, ErrorCode};
use futures::future::BoxFuture;
use gyre_tools::WorkspaceFs;

/// How long the editor gets to answer one file request.
const FS_WAIT: Duration = Duration::from_secs(30);

/// One session's files, through its editor.
pub struct ClientFiles {
    cx: ConnectionTo<Client>,
    session_id: String,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    pub fn new(cx: ConnectionTo<Client>, session_id: String) -> Self {
        Self { cx, session_id }
    }

    pub async fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session_id.clone(), path.to_path_buf());
        let asked = self.cx.send_request(request).block_task();
        match tokio::time::timeout(FS_WAIT, asked).await {
            Err(_) => Err(format!(
                "the editor did not answer within {} s",
                FS_WAIT.as_secs()
            )),
            Ok(Err(error)) if error.code == ErrorCode::RESOURCE_NOT_FOUND => {
                Err("not found".to_string())
            }
            Ok(Err(error)) => Err(error.message),
            Ok(Ok(response)) => Ok(response.content),
        }
    }

    pub async fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(
            self.session_id.clone(),
            path.to_path_buf(),
            text.to_string(),
        );
        let asked = self.cx.send_request(request).block_task();
        match tokio::time::timeout(FS_WAIT, asked).await {
            Err(_) => Err(format!(
                "the editor did not answer within {} s",
                FS_WAIT.as_secs()
            )),
            Ok(Err(error)) => Err(error.message),
            Ok(Ok(_)) => Ok(()),
        }
    }
}

impl WorkspaceFs for ClientFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(ClientFiles::read_text(self, path))
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(ClientFiles::write_text(self, path, text))
    }
}
