//! A bounded wrapper around rmcp's in-memory session manager.
//!
//! Invariant: at most `max` sessions are live; a session idle for longer than the configured
//! timeout is closed by rmcp's session worker (which then removes it), so a client that never
//! sends DELETE cannot grow memory without limit. Creation is serialized so concurrent
//! `initialize` requests cannot overshoot the bound.

use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use thiserror::Error;

/// Session-manager failures.
#[derive(Debug, Error)]
pub enum SessionsError {
    /// The live-session bound is reached.
    #[error("too many live sessions (limit {0})")]
    Full(usize),
    /// From rmcp's manager.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`] with a bound on live sessions.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    create: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    /// At most `max` sessions, each closed after `idle` without traffic.
    pub fn new(max: usize, idle: Duration) -> BoundedSessions {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(idle);
        inner.session_config = config;
        BoundedSessions {
            inner,
            max,
            create: tokio::sync::Mutex::new(()),
        }
    }

    /// Number of live sessions.
    pub async fn live(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _serialized = self.create.lock().await;
        if self.live().await >= self.max {
            tracing::warn!(
                limit = self.max,
                "new MCP session refused: live-session limit reached"
            );
            return Err(SessionsError::Full(self.max));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
