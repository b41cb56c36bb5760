//! The input side of the app: the prompt editor, the prompt history, the
//! workspace's file list and completion of `/commands` and `@paths`.

pub mod complete;
pub mod editor;
pub mod files;
pub mod history;
