//! A bounded wrapper around rmcp's in-memory session manager.
//!
//! Invariants: at most `max` sessions are live; only sessions count (a request that needs none is
//! never refused for want of one). When the bound is reached, a new session takes the place of
//! the least recently used *idle* session (no response or event stream open); only when every
//! session is busy is it refused — so one token holder cannot lock every client out by opening
//! `max` sessions and leaving them. A session idle for longer than the configured timeout is
//! closed by rmcp's session worker. Creation is serialized so concurrent `initialize` requests
//! cannot overshoot the bound. Each session remembers the [`Owner`] of the caller whose
//! `initialize` opened it, so the transport can refuse its id to anyone else.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use thiserror::Error;

use crate::identity::Owner;

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

/// When a session was last used, and how many of its streams are open.
#[derive(Debug)]
struct Usage {
    last_used: Instant,
    open_streams: Arc<AtomicUsize>,
    /// Who opened the session (recorded as its `initialize` is answered).
    owner: Option<Owner>,
}

/// Keeps a session's stream counted as open until the stream is dropped.
struct OpenStream(Arc<AtomicUsize>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// rmcp's [`LocalSessionManager`] with a bound on live sessions.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    create: tokio::sync::Mutex<()>,
    usage: Mutex<HashMap<SessionId, Usage>>,
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
            usage: Mutex::new(HashMap::new()),
        }
    }

    /// Makes room for one new session: `true` when there is room (after closing the least
    /// recently used idle session if the bound was reached), `false` when every session is busy.
    pub async fn make_room(&self) -> bool {
        let live: HashSet<SessionId> = self.inner.sessions.read().await.keys().cloned().collect();
        let victim = {
            let Ok(mut usage) = self.usage.lock() else {
                return false;
            };
            // Forget sessions rmcp has closed on its own (idle expiry), so this map stays bounded.
            usage.retain(|id, _| live.contains(id));
            if live.len() < self.max {
                return true;
            }
            live.iter()
                .filter(|id| {
                    usage
                        .get(*id)
                        .is_none_or(|u| u.open_streams.load(Ordering::Acquire) == 0)
                })
                .min_by_key(|id| usage.get(*id).map(|u| u.last_used))
                .cloned()
        };
        let Some(victim) = victim else {
            return false;
        };
        tracing::info!(
            limit = self.max,
            "closing the least recently used idle MCP session to make room for a new one"
        );
        let _ = self.inner.close_session(&victim).await;
        self.forget(&victim);
        true
    }

    /// Marks a session as used now; `None` when it is unknown.
    fn touch(&self, id: &SessionId) -> Option<Arc<AtomicUsize>> {
        let mut usage = self.usage.lock().ok()?;
        let entry = usage.entry(id.clone()).or_insert_with(|| Usage {
            last_used: Instant::now(),
            open_streams: Arc::new(AtomicUsize::new(0)),
            owner: None,
        });
        entry.last_used = Instant::now();
        Some(entry.open_streams.clone())
    }

    /// Records who opened session `id` (the caller of its `initialize`). The first record
    /// stands: a session never changes hands.
    pub fn record_owner(&self, id: &str, owner: Owner) {
        if let Ok(mut usage) = self.usage.lock()
            && let Some(entry) = usage.get_mut(id)
        {
            entry.owner.get_or_insert(owner);
        }
    }

    /// Whether `owner` may use session `id`: `false` only for a session another caller
    /// opened. An id this map does not know is left to rmcp, which answers it as unknown.
    pub fn usable_by(&self, id: &str, owner: &Owner) -> bool {
        let Ok(usage) = self.usage.lock() else {
            return false;
        };
        usage
            .get(id)
            .and_then(|u| u.owner.as_ref())
            .is_none_or(|recorded| recorded == owner)
    }

    fn forget(&self, id: &SessionId) {
        if let Ok(mut usage) = self.usage.lock() {
            usage.remove(id);
        }
    }

    /// Counts `stream` as open on session `id` until it ends or is dropped.
    fn counted<S>(
        &self,
        id: &SessionId,
        stream: S,
    ) -> impl Stream<Item = S::Item> + Send + Sync + 'static
    where
        S: Stream + Send + Sync + 'static,
    {
        let guard = self.touch(id).map(|open| {
            open.fetch_add(1, Ordering::AcqRel);
            OpenStream(open)
        });
        stream.map(move |item| {
            let _open = &guard;
            item
        })
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
        if !self.make_room().await {
            return Err(SessionsError::Full(self.max));
        }
        let (id, transport) = self.inner.create_session().await?;
        self.touch(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.inner.initialize_session(id, message).await?;
        self.touch(id);
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.counted(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await?;
        self.touch(id);
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.counted(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.counted(id, stream))
    }
}
