//! Fuzz target: the UPID parser (task ids Proxmox returns and callers pass back). Invariant:
//! any string is either refused with a reason or parsed into a UPID that prints back to a
//! string parsing to the same UPID — never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nandi_proxmox_mcp::pve::Upid;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Upid::parse(text) {
        Ok(upid) => {
            let printed = upid.to_string();
            let again = Upid::parse(&printed).expect("a printed UPID parses");
            assert_eq!(again, upid, "UPID round trip");
        }
        Err(e) => assert!(!e.reason().is_empty(), "a refusal gives a reason"),
    }
});
