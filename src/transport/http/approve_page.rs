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
//! Under OAuth a link of an OAuth caller needs a signed-in person (see `approve_login`): the
//! page shows neither the question nor the form before the person signed in, and a POST counts
//! only with the session cookie the sign-in set (HttpOnly, `SameSite=Strict`, `Secure` when the
//! page's address is https, path = this link, at most ten minutes). Without OAuth the link
//! itself is the permission.
//!
//! Invariant: only a POST with the link's token and call digest — and, for a link that needs a
//! signed-in person, that person's session — while the call still waits, decides; an unknown,
//! expired, used or abandoned link answers 404/410 and decides nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use url::Url;

use super::approve_login::{
    ApprovalLogin, BINDING_COOKIE, CALLBACK_ROUTE, LOGIN_ROUTE, LOGIN_TTL, LoginProblem,
    SESSION_COOKIE, cookie, set_cookie,
};
use crate::approval::{LinkProblem, PageDecision, PageView, PendingApprovals};

/// Route of the page.
pub const APPROVE_ROUTE: &str = "/approve/{id}";

/// What the page's handlers share: the store and, under OAuth, the sign-in.
#[derive(Clone, Debug)]
struct Page {
    pending: Arc<PendingApprovals>,
    login: Option<Arc<ApprovalLogin>>,
}

/// The page's routes, reading `pending`, without sign-in (a link is its own permission).
pub fn routes(pending: Arc<PendingApprovals>) -> Router {
    routes_with(pending, None)
}

/// The page's routes with the OAuth sign-in `login` for links that need a signed-in person.
pub fn routes_with(pending: Arc<PendingApprovals>, login: Option<Arc<ApprovalLogin>>) -> Router {
    Router::new()
        .route(CALLBACK_ROUTE, get(callback))
        .route(APPROVE_ROUTE, get(show).post(decide))
        .route(LOGIN_ROUTE, get(sign_in))
        .with_state(Page { pending, login })
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

async fn show(
    State(page_state): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = cookie(&headers, SESSION_COOKIE);
    match page_state.pending.view(&id, session.as_deref()) {
        Ok(view) if view.approvers.needs_sign_in() && view.signed_in.is_none() => {
            sign_in_page(&id, &view, page_state.login.is_some())
        }
        Ok(view) => decision_page(&view, &link_path(&page_state.pending, &id)),
        Err(problem) => refusal(problem),
    }
}

/// The question and the Approve/Decline form, posting to `action` (the link's own path).
fn decision_page(view: &PageView, action: &str) -> Response {
    let who = view
        .signed_in
        .as_deref()
        .map(|name| {
            format!(
                "<p class=\"m\">Signed in as <code>{}</code>.</p>",
                escape(name)
            )
        })
        .unwrap_or_default();
    page(
        StatusCode::OK,
        "Approve this Proxmox action?",
        &format!(
            "<p class=\"q\">{question}</p>{who}\
             <p class=\"m\">Tool <code>{tool}</code>. This link works once, for this exact call, for {left} more seconds.</p>\
             <form method=\"post\" action=\"{action}\">\
             <input type=\"hidden\" name=\"token\" value=\"{token}\">\
             <input type=\"hidden\" name=\"call\" value=\"{call}\">\
             <button class=\"ok\" name=\"decision\" value=\"approve\">Approve</button> \
             <button name=\"decision\" value=\"decline\">Decline</button>{lease}\
             </form>",
            lease = lease_buttons(view),
            question = escape(&view.question),
            tool = escape(view.tool),
            left = view.seconds_left,
            action = escape(action),
            token = escape(&view.token),
            call = escape(&view.call),
        ),
    )
}

/// The lease choices of a page that offers one: each approves this call and lets later calls
/// of its class to its target run unasked for that long.
fn lease_buttons(view: &PageView) -> String {
    let Some((shown, minutes)) = &view.lease else {
        return String::new();
    };
    let buttons: String = minutes
        .iter()
        .map(|m| {
            format!(" <button name=\"decision\" value=\"approve-for-{m}\">Approve, and allow for {m} min</button>")
        })
        .collect();
    format!(
        "<p class=\"m\">Or approve and also allow {} without asking again for a while (revocable with <code>nandi-proxmox-mcp lease revoke</code>):</p><p>{buttons}</p>",
        escape(shown)
    )
}

/// Before sign-in: who may decide, and the way to sign in (no question, no form).
fn sign_in_page(id: &str, view: &PageView, can_sign_in: bool) -> Response {
    let how = if can_sign_in {
        format!(
            "<p><a class=\"ok b\" href=\"{}/login\">Sign in to see and decide</a></p>",
            escape(id)
        )
    } else {
        "<p>This server has no sign-in for approvers configured (MCP_OAUTH_APPROVAL_CLIENT_ID), so this call cannot be decided here; it will be refused when the link expires.</p>".to_owned()
    };
    page(
        StatusCode::OK,
        "Sign in to decide",
        &format!(
            "<p>A Proxmox action waits for approval by {who}. Sign in at your identity provider first; this link works for {left} more seconds.</p>{how}",
            who = escape(&view.approvers.describe()),
            left = view.seconds_left,
        ),
    )
}

/// The path of link `id` as the browser sees it (under the page's public base path).
fn link_path(pending: &PendingApprovals, id: &str) -> String {
    format!("{}approve/{id}", base_path(pending))
}

/// The public base path of the page (`/` unless a base URL with a path is configured).
fn base_path(pending: &PendingApprovals) -> String {
    pending
        .base_url()
        .map_or_else(|| "/".to_owned(), |u| u.path().to_owned())
}

/// The callback's path as the browser sees it.
fn callback_path(pending: &PendingApprovals) -> String {
    format!(
        "{}{}",
        base_path(pending),
        CALLBACK_ROUTE.trim_start_matches('/')
    )
}

/// Whether cookies must carry `Secure` (the page's public address is https).
fn secure(pending: &PendingApprovals) -> bool {
    pending.base_url().is_some_and(|u| u.scheme() == "https")
}

/// `GET /approve/{id}/login`: starts the sign-in for a link that needs one.
async fn sign_in(State(page_state): State<Page>, Path(id): Path<String>) -> Response {
    let pending = &page_state.pending;
    let view = match pending.view(&id, None) {
        Ok(view) => view,
        Err(problem) => return refusal(problem),
    };
    let (Some(login), Some(base)) = (&page_state.login, pending.base_url()) else {
        return sign_in_page(&id, &view, false);
    };
    if !view.approvers.needs_sign_in() {
        return decision_page(&view, &link_path(pending, &id));
    }
    match login.start(&id, &base).await {
        Ok(started) => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            let headers = response.headers_mut();
            if let Ok(location) = HeaderValue::from_str(started.authorize.as_str()) {
                headers.insert(header::LOCATION, location);
            }
            let binding = set_cookie(
                BINDING_COOKIE,
                &started.binding,
                &callback_path(pending),
                LOGIN_TTL.as_secs(),
                "Lax",
                secure(pending),
            );
            if let Some(value) = binding {
                headers.insert(header::SET_COOKIE, value);
            }
            headers.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            response
        }
        Err(problem) => login_refusal(&problem),
    }
}

/// What the authorization server sends back.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Callback {
    state: String,
    code: Option<String>,
    error: Option<String>,
}

/// `GET /approve/callback`: finishes the sign-in; an admitted person gets the decision form and
/// a session cookie for that link.
async fn callback(
    State(page_state): State<Page>,
    Query(answer): Query<Callback>,
    headers: HeaderMap,
) -> Response {
    let Some(login) = &page_state.login else {
        return login_refusal(&LoginProblem::State);
    };
    let binding = cookie(&headers, BINDING_COOKIE);
    let code = if answer.error.is_some() {
        None
    } else {
        answer.code.as_deref()
    };
    let (id, person) = match login.finish(&answer.state, code, binding.as_deref()).await {
        Ok(found) => found,
        Err(problem) => return login_refusal(&problem),
    };
    let pending = &page_state.pending;
    let admitted = match pending.admit(&id, &person) {
        Ok(admitted) => admitted,
        Err(LinkProblem::NotAllowed) => {
            tracing::warn!(person = %person.label(), "approval page: a signed-in person who may not decide this call was refused");
            let needed = pending
                .view(&id, None)
                .map_or_else(|_| String::new(), |v| v.approvers.describe());
            return page(
                StatusCode::FORBIDDEN,
                "Not yours to decide",
                &format!(
                    "<p>You are signed in as <code>{who}</code>, and this call may be decided only by {needed}.</p><p>Nothing was decided.</p>",
                    who = escape(&person.label()),
                    needed = escape(&needed),
                ),
            );
        }
        Err(problem) => return refusal(problem),
    };
    tracing::info!(person = %admitted.label, "approval page: a person signed in to decide");
    let view = match pending.view(&id, Some(&admitted.secret)) {
        Ok(view) => view,
        Err(problem) => return refusal(problem),
    };
    let path = link_path(pending, &id);
    let mut response = decision_page(&view, &path);
    let secure = secure(pending);
    let session = set_cookie(
        SESSION_COOKIE,
        &admitted.secret,
        &path,
        admitted.seconds,
        "Strict",
        secure,
    );
    let spent = set_cookie(
        BINDING_COOKIE,
        "",
        &callback_path(pending),
        0,
        "Lax",
        secure,
    );
    for value in [session, spent].into_iter().flatten() {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// The page for a sign-in that admitted nobody.
fn login_refusal(problem: &LoginProblem) -> Response {
    tracing::warn!(reason = %problem, "approval page: a sign-in was refused");
    let status = match problem {
        LoginProblem::Busy => StatusCode::SERVICE_UNAVAILABLE,
        LoginProblem::Server(_) => StatusCode::BAD_GATEWAY,
        _ => StatusCode::FORBIDDEN,
    };
    let text = match problem {
        // Details of the authorization server's trouble stay in the log.
        LoginProblem::Server(_) => "the identity provider could not be asked".to_owned(),
        other => other.to_string(),
    };
    page(
        status,
        "Not signed in",
        &format!(
            "<p>Sign-in failed: {}.</p><p>Nothing was decided. Open the approval link again to retry.</p>",
            escape(&text)
        ),
    )
}

async fn decide(
    State(page_state): State<Page>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let pending = &page_state.pending;
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
    let decision = match (posted.decision.as_str(), lease_minutes(&posted.decision)) {
        ("approve", _) => PageDecision::Approve,
        ("decline", _) => PageDecision::Decline,
        (_, Some(minutes)) => PageDecision::ApproveFor(minutes),
        _ => {
            return page(
                StatusCode::BAD_REQUEST,
                "No decision",
                "<p>Choose Approve or Decline on the approval page; nothing was decided.</p>",
            );
        }
    };
    let session = cookie(&headers, SESSION_COOKIE);
    match pending.decide(
        &id,
        &posted.token,
        &posted.call,
        decision,
        session.as_deref(),
    ) {
        Ok(tool) => {
            tracing::info!(
                tool,
                decision = match decision {
                    PageDecision::Approve => "approved",
                    PageDecision::ApproveFor(_) => "approved with a lease",
                    PageDecision::Decline => "declined",
                },
                "approval page: a person decided"
            );
            let text = match decision {
                PageDecision::Approve => {
                    "<p>Approved. The call runs now, exactly once; you can close this page.</p>"
                }
                PageDecision::ApproveFor(_) => {
                    "<p>Approved, with a lease. The call runs now; later calls of its class to its target run without asking until the lease ends (<code>nandi-proxmox-mcp lease revoke</code> ends it sooner). You can close this page.</p>"
                }
                PageDecision::Decline => {
                    "<p>Declined. Nothing is sent to Proxmox; you can close this page.</p>"
                }
            };
            page(StatusCode::OK, "Decided", text)
        }
        Err(problem) => {
            tracing::warn!(?problem, "approval page: a decision was refused");
            refusal(problem)
        }
    }
}

/// The minutes of an `approve-for-<minutes>` decision.
fn lease_minutes(decision: &str) -> Option<u32> {
    decision.strip_prefix("approve-for-")?.parse().ok()
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
        LinkProblem::NotSignedIn => (
            StatusCode::FORBIDDEN,
            "This call may be decided only by a signed-in person; open the link again and sign in.",
        ),
        LinkProblem::NotAllowed => (
            StatusCode::FORBIDDEN,
            "The signed-in person may not decide this call.",
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
button,.b{font-size:1rem;padding:.6rem 1.4rem;margin-right:.5rem}.ok{background:#1a7f37;color:#fff;border:0}\
a.b{display:inline-block;text-decoration:none}";

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
