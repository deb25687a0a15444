//! The approval page, `/approve/{id}`: where a person approves or declines one gated call
//! reached by link (URL-mode elicitation or the `PVE_APPROVAL_NOTIFY` webhook).
//!
//! `GET` shows the same question the form elicitation shows (reasons first), HTML-escaped, and a
//! form with Approve and Decline; `POST` decides. The page is not behind the `/mcp` bearer token
//! (a person's browser has none) but is behind the Host/Origin guard, the body limit and the
//! timeouts like every route. Against cross-site forgery the POST must carry the link's own
//! anti-forgery token and call digest (embedded in the GET page), and a `Sec-Fetch-Site` other
//! than `same-origin` is refused; the guard refuses foreign `Origin`s. Every answer forbids
//! framing, scripts and outside resources (`Content-Security-Policy`, `X-Frame-Options`), and
//! sends the `Referer` to this server only (`same-origin`: with `no-referrer` browsers send
//! `Origin: null` on the page's own POST, which the Origin guard must refuse).
//!
//! Invariant: only a POST with the link's token and call digest, while the call still waits,
//! decides; an unknown, expired, used or abandoned link answers 404/410 and decides nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use url::Url;

use crate::approval::{LinkProblem, PageDecision, PendingApprovals};

/// Route of the page.
pub const APPROVE_ROUTE: &str = "/approve/{id}";

/// The page's routes, reading `pending`.
pub fn routes(pending: Arc<PendingApprovals>) -> Router {
    Router::new()
        .route(APPROVE_ROUTE, get(show).post(decide))
        .with_state(pending)
}

/// Offers the page's address derived from a bound address: only a loopback address is one a
/// person's browser reaches as it is (anything else needs `PVE_APPROVAL_BASE_URL`).
pub fn offer_loopback_address(pending: &PendingApprovals, addr: SocketAddr) {
    if addr.ip().is_loopback()
        && let Ok(url) = Url::parse(&format!("http://{addr}/"))
    {
        pending.offer_base_url(url);
    }
}

/// The form the page posts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Posted {
    token: String,
    call: String,
    decision: String,
}

async fn show(State(pending): State<Arc<PendingApprovals>>, Path(id): Path<String>) -> Response {
    match pending.view(&id) {
        Ok(view) => page(
            StatusCode::OK,
            "Approve this Proxmox action?",
            &format!(
                "<p class=\"q\">{question}</p>\
                 <p class=\"m\">Tool <code>{tool}</code>. This link works once, for this exact call, for {left} more seconds.</p>\
                 <form method=\"post\">\
                 <input type=\"hidden\" name=\"token\" value=\"{token}\">\
                 <input type=\"hidden\" name=\"call\" value=\"{call}\">\
                 <button class=\"ok\" name=\"decision\" value=\"approve\">Approve</button> \
                 <button name=\"decision\" value=\"decline\">Decline</button>\
                 </form>",
                question = escape(&view.question),
                tool = escape(view.tool),
                left = view.seconds_left,
                token = escape(&view.token),
                call = escape(&view.call),
            ),
        ),
        Err(problem) => refusal(problem),
    }
}

async fn decide(
    State(pending): State<Arc<PendingApprovals>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or(""));
    if site.is_some_and(|s| s != "same-origin") {
        tracing::warn!("approval page: a cross-site POST was refused");
        return page(
            StatusCode::FORBIDDEN,
            "Refused",
            "<p>This decision did not come from the approval page itself; nothing was decided.</p>",
        );
    }
    let posted: Posted = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let decision = match posted.decision.as_str() {
        "approve" => PageDecision::Approve,
        "decline" => PageDecision::Decline,
        _ => {
            return page(
                StatusCode::BAD_REQUEST,
                "No decision",
                "<p>Choose Approve or Decline on the approval page; nothing was decided.</p>",
            );
        }
    };
    match pending.decide(&id, &posted.token, &posted.call, decision) {
        Ok(tool) => {
            tracing::info!(
                tool,
                decision = if decision == PageDecision::Approve {
                    "approved"
                } else {
                    "declined"
                },
                "approval page: a person decided"
            );
            let text = match decision {
                PageDecision::Approve => {
                    "<p>Approved. The call runs now, exactly once; you can close this page.</p>"
                }
                PageDecision::Decline => {
                    "<p>Declined. Nothing is sent to Proxmox; you can close this page.</p>"
                }
            };
            page(StatusCode::OK, "Decided", text)
        }
        Err(problem) => {
            if problem == LinkProblem::Forged {
                tracing::warn!(
                    "approval page: a POST without the link's anti-forgery token was refused"
                );
            }
            refusal(problem)
        }
    }
}

/// The page and status for a link that decides nothing.
fn refusal(problem: LinkProblem) -> Response {
    let (status, text) = match problem {
        LinkProblem::Unknown => (
            StatusCode::NOT_FOUND,
            "This approval link is not known here (mistyped, or issued by another server or before a restart).",
        ),
        LinkProblem::OtherCall => (
            StatusCode::NOT_FOUND,
            "This form belongs to another call than this link's.",
        ),
        LinkProblem::Expired => (
            StatusCode::GONE,
            "This approval link has expired; the call was refused.",
        ),
        LinkProblem::Used => (
            StatusCode::GONE,
            "This approval link was already used; a link decides once.",
        ),
        LinkProblem::Abandoned => (
            StatusCode::GONE,
            "The call is no longer waiting (it was cancelled or timed out).",
        ),
        LinkProblem::Forged => (
            StatusCode::FORBIDDEN,
            "This decision did not carry the page's anti-forgery token; open the link again.",
        ),
    };
    page(
        status,
        "Nothing was decided",
        &format!("<p>{}</p><p>Nothing was decided.</p>", escape(text)),
    )
}

/// A whole HTML answer with the page's headers; `body` is already escaped.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title),
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;background:#f6f6f6}\
main{max-width:42rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:8px}\
.q{white-space:pre-wrap;font-size:1.05rem}.m{color:#555}\
button{font-size:1rem;padding:.6rem 1.4rem;margin-right:.5rem}.ok{background:#1a7f37;color:#fff;border:0}";

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_escaped() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
