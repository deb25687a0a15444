//! nandi-proxmox-mcp: an MCP server for Proxmox VE.
//!
//! Table of contents (request flow order):
//! - [`cli`] — command line: `run`, `tools`, `setup`, `doctor`, `bootstrap`, `harden`, `list`,
//!   `completions`; maps failures (and RED reports) to exit codes.
//! - [`config`] — instance files, discovery and environment variables → validated `Config`.
//! - [`policy`] — access tier, module mode, category and tool lists → which tools exist.
//! - [`catalog`] — every tool as one row of data.
//! - [`schema`] — JSON input schema and argument validation derived from a row.
//! - [`registry`] — the exposed tools, built once (rmcp `Tool`s with annotations and `_meta`).
//! - [`server`] — the rmcp `ServerHandler`.
//! - [`clusters`] — several clusters, one server: per-cluster states, the listing, routing a call.
//! - [`state`] — `AppState`: what every call reads (registry, policy, backends, audit trail).
//! - [`compact`] — the compact surface: find, describe and call tools through three meta-tools.
//! - [`prompts`] — prompt recipes, offered when their tools are registered.
//! - [`pipeline`] — one call, in order: validate → gate → dry-run → approve → dispatch.
//! - [`gate`] — whether a call needs approval, from the row and the arguments.
//! - [`identity`] — who is asking (stdio user, static token, OAuth subject) and what they may reach.
//! - [`approval`] — asks a person (elicitation, MRTR) or checks the confirm flag.
//! - [`preview`] — the exact request, target and current values, for questions and dry-runs.
//! - [`dispatch`] — validation, backend, envelope.
//! - [`backends`] — what a call can reach (`Backends`) and the REST request a row renders.
//! - [`effects`] — what each outgoing request does (from Proxmox's schema), and the clearance
//!   checked as it leaves.
//! - [`outcome`] — the end of every call: redact → audit → envelope (output cap).
//! - [`lean`] — list projection/paging and the result size cap.
//! - [`composite`] — tools made of several requests or a guarded one.
//! - [`tasks`] — UPIDs as MCP tasks, `wait`, progress parsed from task logs.
//! - [`redact`] — per-field masking of secrets in results and audited arguments.
//! - [`audit`] — the hash-chained audit trail of changes and refusals, and its verifier.
//! - [`envelope`] — the `{ok, data | error, meta}` result shape and error codes.
//! - [`pve`] — the Proxmox REST client (TLS modes, retries, error mapping).
//! - [`ssh`] — the SSH executor (russh, verified host keys), node routing and the remote tools.
//! - (not here: the in-process fake Proxmox for tests and `run --demo` is its own crate,
//!   `pve_emulator` in crates/pve-emulator.)
//! - [`docs`] — `docs/TOOLS.md` rendered from the catalog (pure functions).
//! - [`undo`] — undo records of changes (beside the audit log) and the one-call revert.
//! - [`transport`] — Streamable HTTP (`MCP_TRANSPORT=http`): auth, Host/Origin guard, limits.

pub mod approval;
pub mod audit;
pub mod backends;
pub mod catalog;
pub mod cli;
pub mod clusters;
pub mod compact;
pub mod composite;
pub mod config;
pub mod dispatch;
pub mod docs;
pub mod effects;
pub mod envelope;
pub mod gate;
pub mod identity;
pub mod lean;
pub mod outcome;
pub mod pipeline;
pub mod policy;
pub mod preview;
pub mod prompts;
pub mod pve;
pub mod redact;
pub mod registry;
pub mod schema;
pub mod server;
pub mod ssh;
pub mod state;
pub mod tasks;
pub mod transport;
pub mod undo;
