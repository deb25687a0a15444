//! The stdio transport: rmcp's newline-delimited JSON over stdin/stdout, with a raw-bytes check
//! in front of rmcp's decoder.
//!
//! A pump task reads stdin line by line. A `tools/call` that repeats a JSON key (see
//! [`super::dupkeys`]) is answered with JSON-RPC `-32602` and never reaches rmcp; every other
//! line is passed through unchanged to rmcp's own transport, which keeps its framing, line-size
//! bound and error handling.
//!
//! Invariant: stdout carries only what rmcp's writer produces (replies, including the refusals,
//! are written through that one writer, one message per line); nothing else is ever written there.

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

use super::dupkeys;

/// Size of the in-process pipe between the pump and rmcp's reader.
const PIPE_BYTES: usize = 64 * 1024;

/// rmcp's stdio transport behind the duplicate-key check.
pub struct CheckedStdio<W: AsyncWrite + Send + Unpin + 'static> {
    inner: AsyncRwTransport<RoleServer, DuplexStream, W>,
    refusals: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

/// The server's stdin/stdout, checked. rmcp's `stdio_pipes` reads and writes pipes on the
/// event loop (no blocking-pool hand-off per line) and falls back to tokio's handles when
/// stdin/stdout are not pipes.
pub fn stdio() -> CheckedStdio<rmcp::transport::io::StdioWriter> {
    let (read, write) = rmcp::transport::stdio_pipes();
    checked(read, write)
}

/// Any reader/writer pair, checked (tests use in-memory pipes).
pub fn checked<R, W>(read: R, write: W) -> CheckedStdio<W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (to_rmcp, from_pump) = tokio::io::duplex(PIPE_BYTES);
    let (refuse, refusals) = mpsc::unbounded_channel();
    tokio::spawn(pump(read, to_rmcp, refuse));
    CheckedStdio {
        inner: AsyncRwTransport::new(from_pump, write),
        refusals,
    }
}

/// Copies `read` to `to_rmcp` line by line, diverting duplicate-key `tools/call` requests.
async fn pump<R: AsyncRead + Unpin>(
    read: R,
    mut to_rmcp: DuplexStream,
    refuse: mpsc::UnboundedSender<ServerJsonRpcMessage>,
) {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded like rmcp's own reader: an over-long line is passed on in pieces, unchecked,
        // and rmcp discards it.
        let mut limited = (&mut read).take(DEFAULT_MAX_LINE_LENGTH as u64 + 1);
        match limited.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.ends_with(b"\n")
            && let Some(duplicate) = dupkeys::duplicate_in_tool_call(&line)
        {
            tracing::warn!(
                path = %duplicate.path,
                "tools/call refused: a JSON key appears twice"
            );
            if let Some(reply) = refusal(&duplicate) {
                let _ = refuse.send(reply);
            }
            continue;
        }
        if to_rmcp.write_all(&line).await.is_err() {
            return;
        }
    }
}

/// The `-32602` reply to a request that repeats a key; `None` for a notification.
fn refusal(duplicate: &dupkeys::DuplicateKey) -> Option<ServerJsonRpcMessage> {
    let id: RequestId = serde_json::from_value(duplicate.id.clone()?).ok()?;
    Some(ServerJsonRpcMessage::error(
        ErrorData::invalid_params(duplicate.message(), None),
        Some(id),
    ))
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for CheckedStdio<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            tokio::select! {
                Some(reply) = self.refusals.recv() => {
                    if let Err(e) = self.inner.send(reply).await {
                        tracing::warn!(error = %e, "could not answer a refused request");
                    }
                }
                // rmcp's reader is cancellation-safe: a partly read line is kept.
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
