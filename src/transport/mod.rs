//! Network transports other than stdio (which `cli::run` opens directly through rmcp).
//!
//! Invariant: every transport serves clones of one [`crate::server::Server`], so the tool
//! registry and the pooled Proxmox client are built once per process, never per request.

pub mod dupkeys;
pub mod http;
pub mod page_listener;
pub mod running;
pub mod stdio;
