//! The stdio transport: rmcp's newline-delimited JSON over stdin/stdout, with a raw-bytes check
//! inside the reader rmcp decodes from.
//!
//! [`CheckedRead`] hands rmcp's decoder stdin line by line. A `tools/call` that repeats a JSON
//! key (see [`super::dupkeys`]) is answered with JSON-RPC `-32602` and never reaches rmcp; a
//! complete line that is not JSON (someone typed `hello`) is answered with `-32700` (at most a
//! few per second) instead of rmcp's silence; every other line is passed through unchanged to
//! rmcp's own decoder, which keeps its framing, line-size bound and error handling. The check
//! runs in the same poll as rmcp's read: no task, no in-process pipe, one copy per line.
//!
//! Invariant: stdout carries only what rmcp's writer produces (replies, including the refusals,
//! are written through that one writer, one message per line); nothing else is ever written there.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rmcp::RoleServer;
use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, BufReader, ReadBuf};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};

use super::dupkeys;

/// rmcp's stdio transport reading through the duplicate-key check.
pub struct CheckedStdio<
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
> {
    inner: AsyncRwTransport<RoleServer, CheckedRead<R>, W>,
    refusals: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

/// The server's stdin/stdout, checked. rmcp's `stdio_pipes` reads and writes pipes on the
/// event loop (no blocking-pool hand-off per line) and falls back to tokio's handles when
/// stdin/stdout are not pipes.
pub fn stdio() -> CheckedStdio<rmcp::transport::io::StdioReader, rmcp::transport::io::StdioWriter> {
    let (read, write) = rmcp::transport::stdio_pipes();
    checked(read, write)
}

/// Any reader/writer pair, checked (tests use in-memory pipes).
pub fn checked<R, W>(read: R, write: W) -> CheckedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (refuse, refusals) = mpsc::unbounded_channel();
    CheckedStdio {
        inner: AsyncRwTransport::new(CheckedRead::new(read, refuse), write),
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

/// The reader rmcp decodes from: `read`, line by line, with duplicate-key `tools/call`
/// requests and complete lines that are not JSON diverted (their replies go to `refuse`).
pub struct CheckedRead<R> {
    read: BufReader<R>,
    /// The piece being read, then (from `served`) the piece being handed to rmcp.
    line: Vec<u8>,
    /// How much of a passed `line` rmcp has taken; `None` while a piece is being read.
    served: Option<usize>,
    /// Whether the previous piece ended a line; if not, this piece is the rest of an over-long
    /// line, which is passed on unchecked for rmcp to discard (answering it instead would make
    /// rmcp take the next message as more of the over-long line).
    at_line_start: bool,
    budget: ParseReplies,
    refuse: mpsc::UnboundedSender<ServerJsonRpcMessage>,
}

impl<R: AsyncRead + Unpin> CheckedRead<R> {
    fn new(read: R, refuse: mpsc::UnboundedSender<ServerJsonRpcMessage>) -> Self {
        CheckedRead {
            read: BufReader::new(read),
            line: Vec::new(),
            served: None,
            at_line_start: true,
            budget: ParseReplies::new(),
            refuse,
        }
    }

    /// Reads the next piece into `line`: a whole line, or at most rmcp's line bound plus one
    /// byte of an over-long one (rmcp discards it), or what was left at end of input.
    /// `Ready(false)`: end of input with nothing left.
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<bool>> {
        let limit = DEFAULT_MAX_LINE_LENGTH + 1;
        loop {
            let available = ready!(Pin::new(&mut self.read).poll_fill_buf(cx))?;
            if available.is_empty() {
                return Poll::Ready(Ok(!self.line.is_empty()));
            }
            let room = limit - self.line.len();
            let window = &available[..available.len().min(room)];
            let (taken, ended) = match window.iter().position(|b| *b == b'\n') {
                Some(newline) => (newline + 1, true),
                None => (window.len(), false),
            };
            self.line.extend_from_slice(&window[..taken]);
            Pin::new(&mut self.read).consume(taken);
            if ended || self.line.len() >= limit {
                return Poll::Ready(Ok(true));
            }
        }
    }

    /// Whether the piece in `line` goes on to rmcp; a refused one is answered here.
    fn passes(&mut self) -> bool {
        let whole = self.at_line_start && self.line.ends_with(b"\n");
        self.at_line_start = self.line.ends_with(b"\n");
        // Blank lines are skipped by rmcp; a line cut off by end of input is left to it.
        if !whole || self.line.trim_ascii().is_empty() {
            return true;
        }
        match dupkeys::check(&self.line) {
            dupkeys::Checked::Clean => true,
            dupkeys::Checked::Duplicate(duplicate) => {
                tracing::warn!(
                    path = %duplicate.path,
                    "tools/call refused: a JSON key appears twice"
                );
                if let Some(reply) = refusal(&duplicate) {
                    let _ = self.refuse.send(reply);
                }
                false
            }
            dupkeys::Checked::NotJson => {
                // The line itself is never logged or echoed: it may hold a pasted secret.
                if self.budget.take() {
                    tracing::warn!(
                        bytes = self.line.len(),
                        "a line on stdin is not JSON; answered with a JSON-RPC parse error"
                    );
                    let _ = self.refuse.send(parse_error());
                }
                false
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CheckedRead<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(served) = this.served {
                let rest = &this.line[served..];
                if !rest.is_empty() {
                    let n = rest.len().min(buf.remaining());
                    buf.put_slice(&rest[..n]);
                    this.served = Some(served + n);
                    return Poll::Ready(Ok(()));
                }
                this.served = None;
                this.line.clear();
            }
            // A read error ends the input as it did rmcp's own reader.
            let more = ready!(this.poll_piece(cx)).unwrap_or(false);
            if !more {
                return Poll::Ready(Ok(()));
            }
            if this.passes() {
                this.served = Some(0);
            } else {
                this.line.clear();
            }
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

impl<R, W> Transport<RoleServer> for CheckedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
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
