//! The one request outside `/api2/json`: the node's API viewer data (`apidata.js`).
//!
//! Invariants: the API token is never sent with it (it is static documentation); it is never
//! retried, and is bounded by its timeout, [`MAX_API_VIEWER_BYTES`] and the cancellation token.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::super::error::PveError;
use super::super::response::{classify_transport, snippet};
use super::Client;

/// Largest `apidata.js` read (PVE 9.1's is about 1.5 MiB).
const MAX_API_VIEWER_BYTES: usize = 16 * 1024 * 1024;

impl Client {
    /// One raw `GET https://host:port/pve-docs/api-viewer/apidata.js`: the API schema the
    /// node serves for its own version, as text (a JavaScript file around a JSON array).
    /// Static documentation, so the API token is not sent; never retried; bounded by
    /// `timeout`, [`MAX_API_VIEWER_BYTES`] and `cancel`.
    pub async fn fetch_api_viewer_data(
        &self,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<String, PveError> {
        let root = self
            .inner
            .base_url
            .strip_suffix("/api2/json")
            .unwrap_or(&self.inner.base_url);
        let url = Url::parse(&format!("{root}/pve-docs/api-viewer/apidata.js"))
            .map_err(|e| PveError::Config(format!("cannot build the apidata.js URL: {e}")))?;
        let exchange = async {
            let mut response = self
                .inner
                .http
                .get(url)
                .header(ACCEPT, HeaderValue::from_static("*/*"))
                .send()
                .await
                .map_err(|e| classify_transport(&e))?;
            let status = response.status();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| classify_transport(&e))? {
                if body.len() + chunk.len() > MAX_API_VIEWER_BYTES {
                    return Err(PveError::Other(
                        "apidata.js is larger than 16 MiB".to_owned(),
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            if !status.is_success() {
                return Err(PveError::Http {
                    status: status.as_u16(),
                    message: snippet(&body),
                    errors: None,
                });
            }
            String::from_utf8(body)
                .map_err(|_| PveError::Other("apidata.js is not UTF-8 text".to_owned()))
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(PveError::Cancelled),
            result = tokio::time::timeout(timeout, exchange) => result.unwrap_or(Err(PveError::Timeout)),
        }
    }
}
