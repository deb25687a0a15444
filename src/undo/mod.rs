//! Undo: every routine (and every approved) change the server can revert records the prior
//! state its revert needs, linked to its audit sequence number; one call reverts one record.
//!
//! - [`capture`]: read before a change is sent, completed after it succeeded
//!   ([`Capture::before`], [`Capture::commit`]), decided from the requests the call sends;
//! - [`record`]: one record and the requests that revert it;
//! - [`store`]: the bounded store beside the audit log (memory when the log is off);
//! - [`revert`]: a revert planned and checked against Proxmox's current state, then sent.
//!
//! Invariants: capture only reads and never stops a call; a revert is refused before anyone
//! is asked when its record is stale or cannot be reverted; a revert passes the gate like
//! any request (its requests' effects are classified, a consequential revert asks a person)
//! and sends exactly the requests it planned. This module imports nothing above the REST
//! client, the effects classifier and the envelope.

pub mod capture;
pub mod record;
pub mod revert;
pub mod store;

pub use capture::Capture;
pub use record::{Part, Record};
pub use revert::Plan;
pub use store::{MAX_RECORDS, NewRecord, Store, UndoError};
