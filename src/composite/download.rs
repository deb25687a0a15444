//! `pve_download_to_storage`: the address guard, then `POST .../download-url`.
//!
//! Invariant: nothing is sent to Proxmox unless the URL passed the guard (syntax and every
//! resolved address); the URL sent is the normalised one the guard checked.

use serde_json::{Value, json};

use super::address_guard::{self, AllowList};
use super::calls::{Calls, text};
use crate::envelope::{ToolFailure, codes, failure_from};
use crate::pve::{ApiRequest, encode_path_segment};
use crate::schema::ValidArgs;

/// Optional parameters passed through unchanged.
const PASSED: &[&str] = &[
    "checksum",
    "checksum-algorithm",
    "compression",
    "verify-certificates",
];

/// Guards the URL and starts the download; returns the task's UPID.
pub(super) async fn run(
    calls: &mut Calls<'_>,
    args: &ValidArgs,
    allow: &[String],
) -> Result<Value, ToolFailure> {
    let url = guard(args, allow).await?;
    let path = format!(
        "/nodes/{}/storage/{}/download-url",
        encode_path_segment(text(args, "node")?),
        encode_path_segment(text(args, "storage")?)
    );
    let mut request = ApiRequest::post(path)
        .param("url", url)
        .param("filename", text(args, "filename")?)
        .param("content", text(args, "content")?);
    for name in PASSED {
        if let Some(value) = args.values.get(name) {
            request = request.param(*name, value.to_wire());
        }
    }
    calls.send(request).await.map_err(failure_from)
}

/// The address guard on the call's URL (syntax, then every address it resolves to): run
/// before anyone is asked, and again just before the request. The normalised URL, or the
/// refusal.
pub(super) async fn guard(args: &ValidArgs, allow: &[String]) -> Result<String, ToolFailure> {
    let allow = AllowList::parse(allow.iter().map(String::as_str));
    address_guard::check(text(args, "url")?, &allow)
        .await
        .map_err(|why| {
            ToolFailure::new(
                codes::TOOL_INPUT_REJECTED,
                format!("The download URL is refused: {why}. Nothing was sent to Proxmox."),
            )
            .with_hint(
                "Only public http(s) hosts are allowed; an operator can list a host or CIDR in PVE_DOWNLOAD_ALLOW.",
            )
            .with_details(json!({"errors": {"url": why.to_string()}}))
        })
}
