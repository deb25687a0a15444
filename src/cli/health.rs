//! `health`: one HTTP GET of a running server's `/health`, for container health checks.
//!
//! A `scratch` image has no shell and no curl, so the binary probes itself. Invariant: only
//! plain `http://` URLs, one request with a short deadline, nothing printed to stdout; exit 0
//! exactly when the answer's status is 200.

use std::time::Duration;

use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::CliError;

/// How long the whole probe may take.
const DEADLINE: Duration = Duration::from_secs(3);

/// Arguments of `health`.
#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The health endpoint of the running server.
    #[arg(long, default_value = "http://127.0.0.1:3000/health")]
    pub url: String,
}

/// Probes `args.url`; `Err` (exit 1) unless the answer is `200`.
pub async fn run(args: HealthArgs) -> Result<(), CliError> {
    let url = url::Url::parse(&args.url)
        .map_err(|e| CliError::Config(format!("--url {:?}: {e}", args.url)))?;
    if url.scheme() != "http" {
        return Err(CliError::Config(format!(
            "--url {:?}: only http:// is probed (the check runs next to the server)",
            args.url
        )));
    }
    let host = url
        .host_str()
        .ok_or_else(|| CliError::Config(format!("--url {:?} has no host", args.url)))?
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let status = tokio::time::timeout(DEADLINE, probe(&host, port, url.path()))
        .await
        .map_err(|_| CliError::Runtime(format!("{}: no answer within {DEADLINE:?}", args.url)))?
        .map_err(|e| CliError::Runtime(format!("{}: {e}", args.url)))?;
    if status == 200 {
        Ok(())
    } else {
        Err(CliError::Runtime(format!("{}: HTTP {status}", args.url)))
    }
}

/// Sends one `GET` and returns the status code of the answer.
async fn probe(host: &str, port: u16, path: &str) -> std::io::Result<u16> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let mut stream = TcpStream::connect((bare, port)).await?;
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut head = [0u8; 32];
    let mut read = 0;
    while read < 12 {
        let n = stream.read(&mut head[read..]).await?;
        if n == 0 {
            break;
        }
        read += n;
    }
    let line = String::from_utf8_lossy(&head[..read]);
    line.strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other("not an HTTP answer"))
}
