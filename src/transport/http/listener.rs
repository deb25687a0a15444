//! The accept loop: HTTP/1.1 connections served by hyper with the configured limits.
//!
//! Invariants: a client must send its headers within the headers timeout, may send at most
//! `max_headers` headers, and a kept-alive connection with no request in progress is closed after
//! the keep-alive timeout (hyper's header timer also closes idle connections, so the effective
//! idle limit is the smaller of the two). On shutdown no new connection is accepted, connections
//! finish their current request, and the loop returns when all are gone or the grace time ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// How long shutdown waits for open connections to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Connection-level limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Time to send the request headers.
    pub headers_timeout: Duration,
    /// Idle time before a kept-alive connection is closed.
    pub keepalive_timeout: Duration,
    /// Most request headers.
    pub max_headers: usize,
}

/// Requests in progress on one connection, and when the last one ended.
struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    last_end_ms: AtomicU64,
}

impl Activity {
    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_end_ms.load(Ordering::Acquire));
        Some(self.born.elapsed().saturating_sub(last))
    }
}

/// Decrements the in-flight count when the response body is dropped (fully sent or abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let ms = self.0.born.elapsed().as_millis() as u64;
        self.0.last_end_ms.store(ms, Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts connections until `shutdown` fires, then drains them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: CancellationToken,
) {
    let tracker = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Usually EMFILE: back off briefly instead of spinning.
                    tracing::warn!(error = %e, "accepting an HTTP connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        tracker.spawn(connection(
            stream,
            peer,
            app.clone(),
            limits,
            shutdown.clone(),
        ));
    }
    drop(listener);
    tracker.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("HTTP connections still open after the shutdown grace period; closing them");
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: ConnLimits,
    shutdown: CancellationToken,
) {
    let activity = Arc::new(Activity {
        born: Instant::now(),
        in_flight: AtomicUsize::new(0),
        last_end_ms: AtomicU64::new(0),
    });
    let tracked = activity.clone();
    let service = tower::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        tracked.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(tracked.clone());
        let app = app.clone();
        async move {
            let response = app.oneshot(request.map(Body::new)).await?;
            Ok::<_, std::convert::Infallible>(response.map(move |body| {
                Body::new(body.map_frame(move |frame| {
                    let _keep = &guard;
                    frame
                }))
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.headers_timeout)
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        let wait = match activity.idle_for() {
            Some(idle) => limits.keepalive_timeout.saturating_sub(idle),
            None => limits.keepalive_timeout,
        };
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "HTTP connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            () = tokio::time::sleep(wait), if !closing => {
                if activity.idle_for().is_some_and(|idle| idle >= limits.keepalive_timeout) {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}
