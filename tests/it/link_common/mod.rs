//! What a person does with an approval link, over real HTTP: open the page, read its hidden
//! anti-forgery fields, post a decision. And a webhook receiver (axum on loopback) that records
//! every notice it is sent.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use reqwest::header::HeaderMap as ReqHeaders;
use tokio::sync::Notify;

/// A browser-less person: plain HTTP, no token, no proxy.
pub fn browser() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

/// An opened page: status, headers and HTML.
pub struct Page {
    pub status: u16,
    pub headers: ReqHeaders,
    pub html: String,
}

impl Page {
    /// The value of the hidden input `name` (empty when absent).
    pub fn hidden(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        self.html
            .split_once(&marker)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(value, _)| value.to_owned())
            .unwrap_or_default()
    }
}

/// `GET link`.
pub async fn open(link: &str) -> Page {
    let response = browser().get(link).send().await.expect("page answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let html = response.text().await.expect("page body");
    Page {
        status,
        headers,
        html,
    }
}

/// `POST link` with a urlencoded form of `fields` and extra `headers`; status and body.
pub async fn post_form(
    link: &str,
    fields: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> (u16, String) {
    let body = fields
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut request = browser()
        .post(link)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("page answers");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// Opens `link` and posts `decision` with the page's own token and call digest, as a browser
/// on the page would (`Sec-Fetch-Site: same-origin`).
pub async fn decide(link: &str, decision: &str) -> (u16, String) {
    let page = open(link).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (token, call) = (page.hidden("token"), page.hidden("call"));
    post_form(
        link,
        &[("token", &token), ("call", &call), ("decision", decision)],
        &[("sec-fetch-site", "same-origin")],
    )
    .await
}

/// One notice a receiver got.
#[derive(Debug, Clone)]
pub struct Notice {
    pub headers: HeaderMap,
    pub body: String,
}

/// A webhook receiver on loopback that answers `status` to every POST and records it.
#[derive(Clone)]
pub struct Receiver {
    pub addr: std::net::SocketAddr,
    notices: Arc<Mutex<Vec<Notice>>>,
    arrived: Arc<Notify>,
}

#[derive(Clone)]
struct Shared {
    notices: Arc<Mutex<Vec<Notice>>>,
    arrived: Arc<Notify>,
    status: StatusCode,
}

async fn record(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    shared.notices.lock().expect("lock").push(Notice {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    shared.arrived.notify_waiters();
    shared.status
}

impl Receiver {
    /// Starts a receiver answering `status`.
    pub async fn start(status: u16) -> Receiver {
        let shared = Shared {
            notices: Arc::default(),
            arrived: Arc::new(Notify::new()),
            status: StatusCode::from_u16(status).expect("status"),
        };
        let app = Router::new()
            .route("/{*path}", post(record))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            addr,
            notices: shared.notices,
            arrived: shared.arrived,
        }
    }

    /// Every notice so far.
    pub fn notices(&self) -> Vec<Notice> {
        self.notices.lock().expect("lock").clone()
    }

    /// Waits (up to 20 s) for the `n`th notice (1-based) and returns it.
    pub async fn nth(&self, n: usize) -> Notice {
        let wait = async {
            loop {
                let arrived = self.arrived.notified();
                if let Some(notice) = self.notices().get(n - 1) {
                    return notice.clone();
                }
                arrived.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .expect("a notice arrives")
    }
}
