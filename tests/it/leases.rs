//! Leases (issue 37, point 4): a person can approve a class of change to one target for a
//! while — the model never can — and every lease is visible, revocable and audited. Through
//! the built binary over stdio with rmcp's client side, against the request-logging emulator;
//! the oracle is what the emulator received and what the person was asked.

use crate::approval_common;
use crate::common;
use crate::harness;
use crate::harness::change_lines as changes;
use crate::link_common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approval_common::{Answer, Person, call, code, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

fn env(emu: &Emulator, dir: &Path, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let audit = dir.join("audit.jsonl");
    let freeze = dir.join("frozen");
    let mut vars = vec![
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_MODULE_MODE", "advanced"),
        ("PVE_AUDIT_LOG", audit.to_str().expect("utf-8")),
        ("PVE_FREEZE_FILE", freeze.to_str().expect("utf-8")),
    ];
    vars.extend_from_slice(extra);
    with_policy(env_for(emu), &vars)
}

/// Runs the built binary's CLI with `env` and returns (status ok, stdout).
fn cli(env: &[(String, String)], args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("cli runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn audit_lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn update(vmid: u32, node: &str, text: &str) -> (&'static str, Value) {
    (
        "pve_qemu_update_config",
        json!({"node": node, "vmid": vmid, "description": text}),
    )
}

async fn run(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Person>,
    (tool, args): (&'static str, Value),
) -> rmcp::model::CallToolResult {
    call(client, tool, args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_grants_a_lease_that_covers_only_its_class_and_target() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::new(Answer::Lease(30));
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, dir.path(), &[])).await;

    // The first change to 102 is asked; the form offers a lease, and the person takes 30 min.
    let first = run(&client, update(102, "pve03", "one")).await;
    assert_ne!(first.is_error, Some(true), "{first:?}");
    assert_eq!(person.questions().len(), 1);
    let form = person.forms.lock().expect("lock")[0].clone();
    assert!(form["properties"].get("lease").is_some(), "{form}");
    assert!(
        person.questions()[0]
            .contains("pve_qemu_update_config calls (change) and routine changes to guest 102"),
        "{}",
        person.questions()[0]
    );

    // A second change to 102 runs unasked, recorded as `lease`; so does a start of 102 (a
    // routine change its `prod` tag would otherwise ask about).
    let second = run(&client, update(102, "pve03", "two")).await;
    assert_ne!(second.is_error, Some(true), "{second:?}");
    assert_eq!(envelope(&second)["meta"]["approval"], "lease");
    let start = call(
        &client,
        "pve_start_qemu_vm",
        json!({"node": "pve03", "vmid": 102}),
    )
    .await;
    assert_ne!(start.is_error, Some(true), "{start:?}");
    assert_eq!(person.questions().len(), 1, "{:#?}", person.questions());
    let sent = changes(&emu);
    assert_eq!(
        sent.iter()
            .filter(|s| s.ends_with("/qemu/102/config"))
            .count(),
        2,
        "{sent:?}"
    );
    assert!(sent.iter().any(|s| s.ends_with("/qemu/102/status/start")));

    // A dry run says the lease would let the call through, and counts no use.
    let (tool, mut args) = update(102, "pve03", "preview");
    args["dry_run"] = json!(true);
    let preview = call(&client, tool, args).await;
    let path = envelope(&preview)["data"]["decision"]["approval"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(path.starts_with("none: lease "), "{path}");

    // Another guest, or a destroy of the same guest, asks again.
    run(&client, update(101, "pve01", "other guest")).await;
    assert_eq!(person.questions().len(), 2);
    let stop = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve03", "vmid": 102}),
    )
    .await;
    assert_ne!(stop.is_error, Some(true), "{stop:?}");
    assert_eq!(person.questions().len(), 3);
    // A destroy is never offered a lease, so the person's lease choice approved it once.
    let stop_form = person.forms.lock().expect("lock")[2].clone();
    assert!(
        stop_form["properties"].get("lease").is_none(),
        "{stop_form}"
    );
    call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve03", "vmid": 102}),
    )
    .await;
    assert_eq!(person.questions().len(), 4, "a destroy was leased");

    // Another tool's change to the leased guest asks: a lease from a description edit does
    // not migrate the guest.
    let migrate = call(
        &client,
        "pve_qemu_migrate",
        json!({"node": "pve03", "vmid": 102, "target": "pve01"}),
    )
    .await;
    assert_ne!(migrate.is_error, Some(true), "{migrate:?}");
    assert_eq!(
        person.questions().len(),
        5,
        "a migration ran on a config lease"
    );

    // The leases are listed, and audited when granted and used.
    let listed = call(&client, "pve_list_leases", json!({})).await;
    let leases = envelope(&listed)["data"]["leases"].clone();
    // Three, each chosen by the person: updates of 102 and 101, and the migration of 102.
    assert_eq!(leases.as_array().map(Vec::len), Some(3), "{leases}");
    let lease_102 = leases
        .as_array()
        .and_then(|l| {
            l.iter().find(|x| {
                x["target"] == "guest 102"
                    && x["covers"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("pve_qemu_update_config"))
            })
        })
        .cloned()
        .expect("lease of 102");
    assert_eq!(lease_102["uses"], 2);
    let id = lease_102["id"].as_str().expect("id").to_owned();
    let trail = audit_lines(dir.path());
    assert!(
        trail.iter().any(|l| l["tool"] == "lease"
            && l["decision"] == "granted"
            && l["arguments"]["id"] == id),
        "no granted line"
    );
    let used: Vec<&Value> = trail
        .iter()
        .filter(|l| l["approval"] == "lease" && l["decision"] == "sending")
        .collect();
    assert_eq!(used.len(), 2, "{used:#?}");
    assert!(used.iter().all(|l| l["approver"] == format!("lease:{id}")));

    // `lease list` reads the same from the audit log.
    let cli_env = env(&emu, dir.path(), &[]);
    let (ok, listing) = cli(&cli_env, &["lease", "list"]);
    assert!(ok && listing.contains(&id), "{listing}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_and_freeze_end_leases_and_the_next_call_asks() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let vars = env(&emu, dir.path(), &[]);
    let person = Person::new(Answer::Lease(15));
    let (client, _home) = connect_stdio(person.clone(), &vars).await;

    run(&client, update(102, "pve03", "one")).await;
    run(&client, update(102, "pve03", "two")).await;
    assert_eq!(person.questions().len(), 1);

    // Revoked by id from a terminal: the next call asks (and grants a new lease).
    let listed = call(&client, "pve_list_leases", json!({})).await;
    let id = envelope(&listed)["data"]["leases"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (ok, said) = cli(&vars, &["lease", "revoke", &id]);
    assert!(ok, "{said}");
    run(&client, update(102, "pve03", "three")).await;
    assert_eq!(person.questions().len(), 2);
    let ended: Vec<Value> = audit_lines(dir.path())
        .into_iter()
        .filter(|l| l["tool"] == "lease" && l["decision"] == "ended")
        .collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0]["outcome"], "revoked");
    assert_eq!(ended[0]["arguments"]["id"], id);

    // Freeze and unfreeze between two calls: the lease granted before is gone all the same.
    let (ok, said) = cli(&vars, &["freeze", "--reason", "test"]);
    assert!(ok, "{said}");
    assert!(said.contains("every lease ends"), "{said}");
    let (ok, said) = cli(&vars, &["unfreeze"]);
    assert!(ok, "{said}");
    // The next lease is granted a second later than the freeze's revocation line.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    run(&client, update(102, "pve03", "four")).await;
    assert_eq!(person.questions().len(), 3, "a lease outlived a freeze");

    // `revoke --all` ends the newest one too.
    let (ok, _) = cli(&vars, &["lease", "revoke", "--all"]);
    assert!(ok);
    run(&client, update(102, "pve03", "five")).await;
    assert_eq!(person.questions().len(), 4);

    // A lease id that is not one is refused, and nothing is written.
    let (ok, _) = cli(&vars, &["lease", "revoke", "../../etc"]);
    assert!(!ok);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_cannot_create_or_widen_a_lease() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    // A person who only ever approves once.
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, dir.path(), &[])).await;

    // A `lease` argument is not an argument of any tool: refused before anything is asked.
    let (tool, mut args) = update(102, "pve03", "x");
    args["lease"] = json!("60");
    let result = call(&client, tool, args).await;
    assert_eq!(code(&result), "TOOL_INPUT_REJECTED", "{result:?}");
    assert_eq!(person.questions().len(), 0);

    // `confirm: true` and a lease in `_meta` change nothing: the person is asked each time,
    // approving once grants nothing, and the second call asks again.
    for _ in 0..2 {
        let (tool, mut args) = update(102, "pve03", "y");
        args["confirm"] = json!(true);
        let mut request = rmcp::model::CallToolRequestParams::new(tool)
            .with_arguments(args.as_object().cloned().expect("object"));
        request.meta = Some(
            serde_json::from_value(json!({"lease": {"minutes": 60}, "approval": "lease"}))
                .expect("a _meta object"),
        );
        let result = client.call_tool(request).await.expect("answered");
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    assert_eq!(person.questions().len(), 2);
    let listed = call(&client, "pve_list_leases", json!({})).await;
    assert_eq!(envelope(&listed)["data"]["leases"], json!([]));
    client.cancel().await.ok();

    // A client that cannot ask: `confirm: true` approves one call and never a lease.
    let unable = Person::unable();
    let (client, _home) = connect_stdio(unable, &env(&emu, dir.path(), &[])).await;
    let (tool, mut args) = update(102, "pve03", "z");
    args["confirm"] = json!(true);
    let first = call(&client, tool, args).await;
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let (tool, args) = update(102, "pve03", "zz");
    let second = call(&client, tool, args).await;
    assert_eq!(code(&second), "CONFIRMATION_REQUIRED", "{second:?}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_can_be_turned_off() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::new(Answer::Lease(15));
    let vars = env(&emu, dir.path(), &[("PVE_LEASE_MAX_MINUTES", "0")]);
    let (client, _home) = connect_stdio(person.clone(), &vars).await;
    run(&client, update(102, "pve03", "one")).await;
    run(&client, update(102, "pve03", "two")).await;
    assert_eq!(person.questions().len(), 2);
    assert!(
        person.forms.lock().expect("lock")[0]["properties"]
            .get("lease")
            .is_none()
    );
    client.cancel().await.ok();
}

/// A client over HTTP that declares only URL elicitation, says "opened" to every link and
/// keeps the links it was sent.
#[derive(Clone, Default)]
struct PageClient {
    links: Arc<Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for PageClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities: rmcp::model::ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).expect("capabilities");
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("lease-page-test", "1.0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        if let rmcp::model::ElicitRequestParams::UrlElicitationParams { url, .. } = request {
            self.links.lock().expect("lock").push(url);
        }
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Accept,
        ))
    }
}

impl PageClient {
    /// The `n`th link (1-based), waiting up to 20 s.
    async fn nth_link(&self, n: usize) -> String {
        for _ in 0..400 {
            if let Some(link) = self.links.lock().expect("lock").get(n - 1) {
                return link.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no link arrived");
    }
}

type HttpClient = Arc<rmcp::service::RunningService<rmcp::RoleClient, PageClient>>;

async fn serve_http(emu: &Emulator) -> nandi_proxmox_mcp::transport::http::HttpServer {
    use nandi_proxmox_mcp::transport::http::{self, HttpSettings};
    let vars = [
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_APPROVAL_TIMEOUT_SECS", "60"),
    ];
    let settings = nandi_proxmox_mcp::policy::Settings::from_lookup(|k| {
        vars.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("policy");
    harness::isolate_schema_cache();
    let server = nandi_proxmox_mcp::server::Server::new(nandi_proxmox_mcp::server::AppState {
        registry: nandi_proxmox_mcp::registry::Registry::build(&settings),
        settings,
        pve: Some(harness::pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: nandi_proxmox_mcp::audit::AuditLog::off(),
        pbs: Vec::new(),
    });
    let vars = [("MCP_PORT", "0"), ("MCP_AUTH_TOKEN", harness::TOKEN)];
    let mut settings = HttpSettings::from_lookup(|k| {
        vars.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("settings");
    settings.ready_cache = Duration::ZERO;
    http::start(server, settings).await.expect("starts")
}

async fn connect_http(
    http: &nandi_proxmox_mcp::transport::http::HttpServer,
    person: PageClient,
) -> HttpClient {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(harness::TOKEN);
    Arc::new(
        person
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("connects over HTTP"),
    )
}

/// Starts an update of guest 102's description in the background.
fn update_in_background(
    client: &HttpClient,
    text: &str,
) -> tokio::task::JoinHandle<rmcp::model::CallToolResult> {
    let client = client.clone();
    let (tool, args) = update(102, "pve03", text);
    tokio::spawn(async move {
        client
            .call_tool(
                rmcp::model::CallToolRequestParams::new(tool)
                    .with_arguments(args.as_object().cloned().expect("object")),
            )
            .await
            .expect("call answered")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_page_grants_a_lease_for_this_session_only() {
    let emu = emulator().await;
    let http = serve_http(&emu).await;
    let person = PageClient::default();
    let client = connect_http(&http, person.clone()).await;

    let calling = update_in_background(&client, "one");
    let link = person.nth_link(1).await;
    let page = link_common::open(&link).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(
        page.html.contains("value=\"approve-for-30\""),
        "{}",
        page.html
    );
    assert!(
        page.html
            .contains("pve_qemu_update_config calls (change) and routine changes to guest 102"),
        "{}",
        page.html
    );
    // A length the page did not offer decides nothing.
    let (status, _) = link_common::decide(&link, "approve-for-45").await;
    assert_eq!(status, 404);
    assert!(changes(&emu).is_empty());
    let (status, html) = link_common::decide(&link, "approve-for-30").await;
    assert_eq!(status, 200, "{html}");
    let first = calling.await.expect("call task");
    assert_ne!(first.is_error, Some(true), "{first:?}");
    assert_eq!(envelope(&first)["meta"]["approval"], "person-link");

    // The same session: the next change to 102 runs without a link.
    let second = update_in_background(&client, "two")
        .await
        .expect("call task");
    assert_ne!(second.is_error, Some(true), "{second:?}");
    assert_eq!(envelope(&second)["meta"]["approval"], "lease");
    assert_eq!(person.links.lock().expect("lock").len(), 1);
    assert_eq!(changes(&emu).len(), 2);

    // Another session holds no lease: it is sent to the page.
    let other = PageClient::default();
    let other_client = connect_http(&http, other.clone()).await;
    let third = update_in_background(&other_client, "three");
    other.nth_link(1).await;
    let (status, _) = link_common::decide(&other.nth_link(1).await, "decline").await;
    assert_eq!(status, 200);
    let third = third.await.expect("call task");
    assert_eq!(code(&third), "CONFIRMATION_DECLINED", "{third:?}");
    assert_eq!(changes(&emu).len(), 2, "another session used the lease");
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_chosen_in_an_input_required_round_trip_is_granted_the_same_way() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::new(Answer::Lease(15));
    let (client, _home) =
        approval_common::connect_stateless(person.clone(), &env(&emu, dir.path(), &[])).await;
    let first = run(&client, update(102, "pve03", "one")).await;
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let second = run(&client, update(102, "pve03", "two")).await;
    assert_eq!(envelope(&second)["meta"]["approval"], "lease", "{second:?}");
    assert_eq!(person.questions().len(), 1);
    // Another guest is asked about again.
    let other = run(&client, update(101, "pve01", "three")).await;
    assert_ne!(other.is_error, Some(true), "{other:?}");
    assert_eq!(person.questions().len(), 2);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_covers_a_plans_steps_it_would_cover_alone_and_no_others() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::new(Answer::Lease(30));
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, dir.path(), &[])).await;
    run(&client, update(102, "pve03", "one")).await;
    assert_eq!(person.questions().len(), 1);

    // Two more changes to 102 as one plan: the lease covers both, so nobody is asked.
    let step = |text: &str| json!({"tool": "pve_qemu_update_config", "arguments": {"node": "pve03", "vmid": 102, "description": text}});
    let plan = json!({"steps": [step("two"), step("three")]});
    let result = call(&client, "pve_apply_plan", plan).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(person.questions().len(), 1, "{:#?}", person.questions());
    let steps: Vec<Value> = audit_lines(dir.path())
        .into_iter()
        .filter(|l| l["tool"] == "pve_qemu_update_config" && l["plan"].is_string())
        .collect();
    assert_eq!(
        steps.len(),
        4,
        "a sending and an executed line per step: {steps:#?}"
    );
    assert!(
        steps.iter().all(|l| l["approval"] == "lease"
            && l["approver"]
                .as_str()
                .is_some_and(|a| a.starts_with("lease:"))),
        "{steps:#?}"
    );

    // A plan with one step beyond the lease (another guest) is asked whole.
    let other = json!({"tool": "pve_qemu_update_config", "arguments": {"node": "pve01", "vmid": 101, "description": "x"}});
    let plan = json!({"steps": [step("four"), other]});
    let result = call(&client, "pve_apply_plan", plan).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(person.questions().len(), 2);
    assert!(
        person.questions()[1].contains("vmid=101"),
        "{}",
        person.questions()[1]
    );
    client.cancel().await.ok();
}
