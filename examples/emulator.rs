//! A stand-alone Proxmox emulator for benchmarks and soak runs: the server under test then
//! talks to Proxmox in another process, as it does in production, so its CPU and memory
//! figures are its own.
//!
//! Prints one JSON line with the connection settings (`PROXMOX_*` variables) on stdout,
//! then serves until stdin closes. Invariant: loopback only (the emulator binds 127.0.0.1).
//!
//! `cargo run --release --example emulator`

use std::time::Duration;

use pve_emulator::{Emulator, EmulatorOptions};
use tokio::io::AsyncReadExt;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = EmulatorOptions {
        task_duration: Duration::from_millis(100),
        ..EmulatorOptions::default()
    };
    let emulator = Emulator::start(options.clone()).await?;
    let settings = serde_json::json!({
        "PROXMOX_HOST": emulator.host(),
        "PROXMOX_PORT": emulator.port().to_string(),
        "PROXMOX_USER": options.user,
        "PROXMOX_REALM": options.realm,
        "PROXMOX_TOKEN_NAME": options.token_name,
        "PROXMOX_TOKEN_SECRET": options.token_secret,
        "PROXMOX_TLS_FINGERPRINT": emulator.cert_fingerprint().unwrap_or_default(),
        "authorization": emulator.token_header(),
        "certificate_pem": emulator.cert_pem().unwrap_or_default(),
    });
    println!("{settings}");
    // Serve until whoever started us closes our stdin.
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    emulator.shutdown().await;
    Ok(())
}
