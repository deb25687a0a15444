//! A listener running in the background: its bound address, and a way to stop it that waits
//! for open connections to finish (bounded by the listener's own drain).
//!
//! Invariant: [`Running::shutdown`] returns only after the serving task has ended.

use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running listener (the HTTP transport, the approval page's stdio-side listener).
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// The listener bound to `addr`, served by `task` until `shutdown` is cancelled.
    pub fn new(addr: SocketAddr, shutdown: CancellationToken, task: JoinHandle<()>) -> Running {
        Running {
            addr,
            shutdown,
            task,
        }
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for open connections (bounded).
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }
}
