//! The stdio transport: rmcp's newline-delimited JSON over stdin/stdout, with a raw-bytes check
//! in front of rmcp's decoder.
//!
//! A pump task reads stdin line by line. A `tools/call` that repeats a JSON key (see
//! [`super::dupkeys`]) is answered with JSON-RPC `-32602` and never reaches rmcp; a complete line
//! that is not JSON (someone typed `hello`) is answered with `-32700` (at most a few per second)
//! instead of rmcp's silence; every other line is passed through unchanged to rmcp's own
//! transport, which keeps its framing, line-size bound and error handling.
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
use tokio::time::{Duration, Instant};

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

/// Most parse-error replies sent in one second. rmcp stays silent on bytes that are not JSON
/// because a peer that turns every reply into more bad input would loop forever; the cap keeps
/// such a loop to a trickle while a person who typed a stray line still gets an answer.
const PARSE_REPLIES_PER_SECOND: u32 = 5;

/// The parse-error budget: [`PARSE_REPLIES_PER_SECOND`] per one-second window.
struct ParseReplies {
    window: Instant,
    sent: u32,
}

impl ParseReplies {
    fn new() -> Self {
        ParseReplies {
            window: Instant::now(),
            sent: 0,
        }
    }

    /// Whether one more reply fits in the current window (and counts it).
    fn take(&mut self) -> bool {
        let now = Instant::now();
        if now.duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.sent = 0;
        }
        self.sent = self.sent.saturating_add(1);
        self.sent <= PARSE_REPLIES_PER_SECOND
    }
}

/// Copies `read` to `to_rmcp` line by line, diverting duplicate-key `tools/call` requests and
/// answering complete lines that are not JSON.
async fn pump<R: AsyncRead + Unpin>(
    read: R,
    mut to_rmcp: DuplexStream,
    refuse: mpsc::UnboundedSender<ServerJsonRpcMessage>,
) {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    let mut budget = ParseReplies::new();
    // Whether the previous piece ended a line; if not, this piece is the rest of an over-long
    // line, which is passed on unchecked for rmcp to discard (answering it instead would make
    // rmcp take the next message as more of the over-long line).
    let mut at_line_start = true;
    loop {
        line.clear();
        // Bounded like rmcp's own reader: an over-long line is passed on in pieces, unchecked,
        // and rmcp discards it.
        let mut limited = (&mut read).take(DEFAULT_MAX_LINE_LENGTH as u64 + 1);
        match limited.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let whole = at_line_start && line.ends_with(b"\n");
        at_line_start = line.ends_with(b"\n");
        // Blank lines are skipped by rmcp; a line cut off by end of input is left to it.
        if whole && !line.trim_ascii().is_empty() {
            match dupkeys::check(&line) {
                dupkeys::Checked::Clean => {}
                dupkeys::Checked::Duplicate(duplicate) => {
                    tracing::warn!(
                        path = %duplicate.path,
                        "tools/call refused: a JSON key appears twice"
                    );
                    if let Some(reply) = refusal(&duplicate) {
                        let _ = refuse.send(reply);
                    }
                    continue;
                }
                dupkeys::Checked::NotJson => {
                    // The line itself is never logged or echoed: it may hold a pasted secret.
                    if budget.take() {
                        tracing::warn!(
                            bytes = line.len(),
                            "a line on stdin is not JSON; answered with a JSON-RPC parse error"
                        );
                        let _ = refuse.send(parse_error());
                    }
                    continue;
                }
            }
        }
        if to_rmcp.write_all(&line).await.is_err() {
            return;
        }
    }
}

/// The `-32700` reply to a line that is not JSON. It has no id (none could be read), so rmcp
/// writes it without one, as it does its own `-32600`; the message never quotes the line.
fn parse_error() -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::parse_error("Parse error: Invalid JSON", None),
        None,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_are_answered_a_few_per_second_at_most() {
        let mut budget = ParseReplies::new();
        let answered = (0..50).filter(|_| budget.take()).count();
        assert_eq!(answered, PARSE_REPLIES_PER_SECOND as usize);
        // A new window answers again.
        budget.window -= Duration::from_secs(2);
        assert!(budget.take());
    }
}
