//! The two Proxmox reads a followed task needs: its status and its log, page by page.
//!
//! Invariant: the log is read from a cursor to its current end in pages of [`LOG_PAGE`]
//! lines, never cut at the first page; a page shorter than asked is the end.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::envelope::{ToolFailure, failure_from};
use crate::pve::{self, ApiRequest, Upid};

/// Lines asked for per log request.
pub const LOG_PAGE: u64 = 500;

/// Per-request time limit of the status and log reads.
const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// What `GET /nodes/{node}/tasks/{upid}/status` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskState {
    /// Still running.
    pub running: bool,
    /// `OK`, `WARNINGS: n`, or the error, once stopped.
    pub exitstatus: Option<String>,
}

impl TaskState {
    /// Whether a stopped task ended well (`OK` or with warnings only).
    pub fn succeeded(&self) -> bool {
        self.exitstatus
            .as_deref()
            .is_some_and(|s| s == "OK" || s.starts_with("WARNINGS"))
    }
}

fn task_path(upid: &Upid, tail: &str) -> String {
    format!(
        "/nodes/{}/tasks/{}{tail}",
        pve::encode_path_segment(&upid.node),
        pve::encode_path_segment(&upid.to_string())
    )
}

/// Reads the task's status.
pub async fn read_state(
    client: &pve::Client,
    upid: &Upid,
    cancel: &CancellationToken,
) -> Result<TaskState, ToolFailure> {
    let request = ApiRequest::get(task_path(upid, "/status")).timeout(READ_TIMEOUT);
    let data = client
        .call(request, cancel)
        .await
        .result
        .map_err(failure_from)?;
    Ok(TaskState {
        running: data["status"] == "running",
        exitstatus: data["exitstatus"].as_str().map(str::to_owned),
    })
}

/// Reads every log line from line `start` (0-based) to the current end, page by page.
pub async fn read_log_from(
    client: &pve::Client,
    upid: &Upid,
    start: u64,
    cancel: &CancellationToken,
) -> Result<Vec<String>, ToolFailure> {
    let mut lines = Vec::new();
    let mut cursor = start;
    loop {
        let request = ApiRequest::get(task_path(upid, "/log"))
            .param("start", cursor.to_string())
            .param("limit", LOG_PAGE.to_string())
            .timeout(READ_TIMEOUT);
        let data = client
            .call(request, cancel)
            .await
            .result
            .map_err(failure_from)?;
        let page: Vec<String> = data
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|row| row["t"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        // Proxmox answers a read past the end with one `no content` line; counting it
        // would skip a real line later.
        if page.len() == 1 && page[0] == "no content" {
            break;
        }
        let got = page.len() as u64;
        lines.extend(page);
        cursor += got;
        if got < LOG_PAGE {
            break;
        }
    }
    Ok(lines)
}

/// Reads a `Value` that may hold a UPID (a tool's answer) as one.
pub fn upid_of(answer: &Value) -> Option<Upid> {
    answer.as_str().and_then(|s| Upid::parse(s).ok())
}
