//! Property test over every registered tool: seeded arguments — valid, boundary and hostile —
//! sent through the whole server (validation, gate, dispatch, REST client) to the emulator.
//!
//! Invariants checked on every case: no panic anywhere in the process; every call gets a final
//! result; a refusal that says nothing was sent (`TOOL_INPUT_REJECTED`, `CONFIRMATION_*`,
//! `APPROVAL_*`) really sent nothing, except the reads it lists in `details.read` (the generic
//! API call's schema lookup), and no hint claims "Nothing was sent" after a request; input the schema forbids is refused; and every request
//! that did reach the emulator has a path whose segments are canonically percent-encoded, with
//! no `.`/`..` segment and no control character, so no argument can change the endpoint.
//!
//! `cargo test --test it fuzz_tools::` runs a small seeded batch; `cargo test --test it fuzz_tools:: --
//! --ignored` runs 100,000 cases. `FUZZ_SEED` and `FUZZ_CASES` override seed and count; a
//! failure names the case and the seed, and `.ci/run` runs 10,000 cases with a new seed each run.

use crate::fuzz_harness;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use fuzz_harness::{EVERYTHING, PANICS};
use nandi_proxmox_mcp::pve::encode_path_segment;
use nandi_proxmox_mcp::schema;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// Codes whose message promises that Proxmox was not contacted.
fn nothing_sent(code: &str) -> bool {
    code == "TOOL_INPUT_REJECTED"
        || code.starts_with("CONFIRMATION_")
        || code.starts_with("APPROVAL_")
        || code == "PROXMOX_NOT_CONFIGURED"
}

/// Strings that have broken URL builders, shells and log parsers.
const HOSTILE: &[&str] = &[
    "..",
    ".",
    "../",
    "../../etc/passwd",
    "/",
    "a/b",
    "/nodes/pve01",
    "x\r\nInjected: 1",
    "a\0b",
    "\0",
    "?a=1",
    "#frag",
    "a?b#c",
    "$(reboot)",
    "; rm -rf /",
    "`id`",
    "|cat",
    "&&",
    "ünïcødé",
    "🙂",
    "\u{202e}gnp.exe",
    "",
    " ",
    "%2e%2e",
    "%00",
    "%2F",
    "\\..\\",
    "\t",
    "-rf",
    "--help",
    "'\"",
    "<script>",
    "${jndi:x}",
    "9999999999999999999999",
];

/// Values known to exist in the seeded emulator, by parameter name.
fn known_values(name: &str) -> &'static [&'static str] {
    match name {
        "node" | "target" | "source_node" => &["pve01", "pve02", "pve03"],
        "storage" | "target_storage" => &["local", "local-lvm"],
        "upid" => &["UPID:pve01:00001234:00005678:65000000:qmstart:101:root@pam:"],
        "volume" | "volid" => &["local:iso/debian-12.iso", "local-lvm:vm-101-disk-0"],
        "userid" => &["root@pam", "svc_mcp@pve"],
        "snapname" | "name" => &["snap1", "before-upgrade"],
        _ => &[],
    }
}

/// Pattern-friendly candidates tried, in order, against a parameter's pattern.
const CANDIDATES: &[&str] = &[
    "pve01",
    "local",
    "snap1",
    "abc",
    "a1",
    "test-1",
    "vm-101-disk-0",
    "root@pam",
    "10.0.0.1",
    "10.0.0.0/24",
    "vmbr0",
    "1",
    "x",
    "a",
    "Z9",
    "on",
    "local:iso/debian-12.iso",
    "net0",
    "scsi0",
    "virtio",
    "512M",
    "1G",
    "user@pve!tok",
    "aa:bb:cc:dd:ee:ff",
    "ext4",
    "PVEAdmin",
];

struct Param<'a> {
    name: &'a str,
    schema: &'a Map<String, Value>,
}

impl Param<'_> {
    fn kind(&self) -> &str {
        self.schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string")
    }
    fn int(&self, key: &str) -> Option<i64> {
        self.schema.get(key).and_then(Value::as_i64)
    }
    /// The compiled pattern (cached: compiling is most of a case's cost otherwise); `None`
    /// without one, or for one the regex crate does not support (look-around).
    fn pattern(&self) -> Option<regex::Regex> {
        static CACHE: LazyLock<Mutex<HashMap<String, Option<regex::Regex>>>> =
            LazyLock::new(Mutex::default);
        let p = self.schema.get("pattern")?.as_str()?;
        let mut cache = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry(p.to_owned())
            .or_insert_with(|| regex::Regex::new(p).ok())
            .clone()
    }
    /// Whether `s` breaks a rule of this string parameter the server is bound to enforce.
    fn string_is_invalid(&self, s: &str) -> bool {
        let too_long = self
            .int("maxLength")
            .is_some_and(|max| s.chars().count() as i64 > max);
        let off_pattern = self.pattern().is_some_and(|re| !re.is_match(s));
        let off_enum = self
            .schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.iter().any(|v| v == s));
        too_long || off_pattern || off_enum
    }
}

/// A valid value for `param`, or a boundary one when `boundary` is set.
fn valid_value(rng: &mut StdRng, param: &Param<'_>, boundary: bool) -> Value {
    if let Some(options) = param.schema.get("enum").and_then(Value::as_array) {
        let pick = if boundary {
            options.last()
        } else {
            options.choose(rng)
        };
        return pick.cloned().unwrap_or(Value::Null);
    }
    match param.kind() {
        "boolean" => json!(rng.random_bool(0.5)),
        "integer" => {
            let min = param.int("minimum").unwrap_or(0);
            let max = param.int("maximum").unwrap_or(min.saturating_add(1000));
            if param.name.contains("vmid") && !boundary {
                return json!(
                    [101, 102, 201, 202, 9000]
                        .choose(rng)
                        .copied()
                        .unwrap_or(101)
                );
            }
            if boundary {
                json!(if rng.random_bool(0.5) { min } else { max })
            } else {
                json!(rng.random_range(min..=max.min(min.saturating_add(100_000))))
            }
        }
        "array" => json!(["ls", "-l"]),
        _ => json!(valid_string(rng, param, boundary)),
    }
}

fn valid_string(rng: &mut StdRng, param: &Param<'_>, boundary: bool) -> String {
    let fits = |s: &str| !param.string_is_invalid(s);
    if boundary && let Some(max) = param.int("maxLength") {
        let long = "a".repeat(usize::try_from(max).unwrap_or(1));
        if fits(&long) {
            return long;
        }
    }
    let known: Vec<&str> = known_values(param.name)
        .iter()
        .copied()
        .filter(|s| fits(s))
        .collect();
    if let Some(s) = known.choose(rng) {
        return (*s).to_owned();
    }
    let fitting: Vec<&str> = CANDIDATES.iter().copied().filter(|s| fits(s)).collect();
    fitting
        .choose(rng)
        .map_or_else(|| "x".to_owned(), |s| (*s).to_owned())
}

/// A value of the wrong JSON type for `param`, nested `depth` levels at most.
fn wrong_type(rng: &mut StdRng, param: &Param<'_>) -> Value {
    let mut deep = json!("bottom");
    for _ in 0..rng.random_range(1..=64) {
        deep = json!([deep]);
    }
    let choices = [json!({"nested": {"object": true}}), deep, json!([1, 2, 3])];
    let mut value = choices.choose(rng).cloned().unwrap_or(Value::Null);
    // Nested once, the deep value is `["bottom"]`: a valid array of strings (`fields`, a guest
    // command). Nest it once more so it stays the wrong type (seed 0xf022, case 10223).
    if value == json!(["bottom"]) {
        value = json!([value]);
    }
    if param.kind() == "string" && rng.random_bool(0.3) {
        value = json!(12345);
    }
    if param.kind() == "integer" && rng.random_bool(0.3) {
        value = json!("not-a-number");
    }
    value
}

/// What a generated case promises about the server's verdict.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Anything may happen, as long as the invariants hold.
    Anything,
    /// The schema forbids this input: it must be refused with nothing sent.
    Refused(String),
}

fn generate(rng: &mut StdRng, schema: &Map<String, Value>) -> (Value, Expect) {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<Param<'_>> = properties
        .iter()
        .filter_map(|(name, s)| s.as_object().map(|schema| Param { name, schema }))
        .collect();
    let mode = rng.random_range(0..10);
    let boundary = (4..6).contains(&mode);
    let mut args = Map::new();
    for p in &params {
        if p.name == "confirm" {
            if rng.random_bool(0.8) {
                args.insert("confirm".into(), json!(true));
            }
        } else if required.contains(&p.name) || rng.random_bool(0.4) {
            args.insert(p.name.to_owned(), valid_value(rng, p, boundary));
        }
    }
    if mode < 6 {
        return (Value::Object(args), Expect::Anything);
    }
    // Hostile: one mutation, which may or may not make the input invalid.
    let target = params
        .iter()
        .filter(|p| p.name != "confirm")
        .collect::<Vec<_>>();
    let Some(p) = target.choose(rng) else {
        args.insert("zz unknown key".into(), json!(1));
        return (Value::Object(args), Expect::Refused("unknown key".into()));
    };
    let name = p.name.to_owned();
    match rng.random_range(0..7) {
        0 => {
            args.insert(name.clone(), wrong_type(rng, p));
            (
                Value::Object(args),
                Expect::Refused(format!("{name}: wrong type")),
            )
        }
        1 => {
            args.insert(format!("zz unknown {}", rng.random::<u16>()), json!("x"));
            (Value::Object(args), Expect::Refused("unknown key".into()))
        }
        2 if p.kind() == "integer" => {
            let bad = match (p.int("minimum"), p.int("maximum")) {
                (_, Some(max)) if rng.random_bool(0.5) => json!(max as i128 + 1),
                (Some(min), _) => json!(min as i128 - 1),
                _ => json!(1.5),
            };
            args.insert(name.clone(), bad);
            (
                Value::Object(args),
                Expect::Refused(format!("{name}: out of range")),
            )
        }
        3 if required.contains(&p.name) => {
            args.remove(&name);
            (
                Value::Object(args),
                Expect::Refused(format!("{name}: missing")),
            )
        }
        _ if p.kind() == "string" => {
            let s = if rng.random_range(0..400) == 0 {
                "A".repeat(1 << 20)
            } else {
                let base = HOSTILE.choose(rng).copied().unwrap_or("..");
                let prefix = valid_string(rng, p, false);
                if rng.random_bool(0.5) {
                    format!("{prefix}{base}")
                } else {
                    base.to_owned()
                }
            };
            let expect = if p.string_is_invalid(&s) {
                Expect::Refused(format!("{name}: breaks its pattern, length or enum"))
            } else {
                Expect::Anything
            };
            args.insert(name, json!(s));
            (Value::Object(args), expect)
        }
        _ => {
            args.insert(
                name.clone(),
                json!(HOSTILE.choose(rng).copied().unwrap_or("..")),
            );
            // An array parameter (a guest command) also takes one string, split on whitespace.
            let expect = if matches!(p.kind(), "string" | "array") {
                Expect::Anything
            } else {
                Expect::Refused(format!("{name}: string for a {}", p.kind()))
            };
            (Value::Object(args), expect)
        }
    }
}

/// Every string among the arguments (not inside nested values).
fn strings_of(args: &Value) -> Vec<&str> {
    args.as_object()
        .map(|m| m.values().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Checks one recorded path; returns how many segments needed percent-encoding.
fn check_path(raw: &str, args: &Value, context: &str) -> usize {
    assert!(
        raw.starts_with('/') || raw.is_empty(),
        "{context}: path {raw:?}"
    );
    let mut encoded = 0;
    for segment in raw.split('/').skip(1) {
        let ok = segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b));
        assert!(
            ok,
            "{context}: segment {segment:?} of {raw:?} is not percent-encoded"
        );
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        assert!(
            decoded != "." && decoded != "..",
            "{context}: dot segment in {raw:?}"
        );
        for value in strings_of(args) {
            if decoded == value {
                assert_eq!(segment, encode_path_segment(value), "{context}: {raw:?}");
            }
        }
        if segment.contains('%') {
            encoded += 1;
        }
    }
    encoded
}

async fn run_cases(cases: u64, seed: u64) {
    fuzz_harness::count_panics();
    let server = fuzz_harness::serve(fuzz_harness::emulator().await, EVERYTHING).await;
    let tools: Vec<(String, Map<String, Value>)> = server
        .tools
        .iter()
        .map(|t| {
            // The whole contract (patterns, lengths), not the lean listing: the fuzz must know
            // which values the server is bound to refuse.
            let spec = nandi_proxmox_mcp::catalog::find(&t.name).expect("a listed tool has a row");
            (t.name.to_string(), schema::input_schema_with_rules(spec))
        })
        .collect();
    assert!(
        tools.len() > 100,
        "every tool is registered: {}",
        tools.len()
    );
    eprintln!("fuzz: {cases} cases, seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut reached, mut refused, mut encoded_segments, mut valid) = (0u64, 0u64, 0usize, 0u64);
    for case in 0..cases {
        let (name, schema) = &tools[(case as usize) % tools.len()];
        let (args, expect) = generate(&mut rng, schema);
        let context = format!(
            "case {case} (seed {seed}; replay: FUZZ_SEED={seed} FUZZ_CASES={} cargo test --test it fuzz_tools::) {name}",
            case + 1
        );
        server.emulator.clear_requests();
        let began = std::time::Instant::now();
        let result =
            fuzz_harness::call(&server.client, name, args.clone(), Duration::from_secs(30))
                .await
                .unwrap_or_else(|e| panic!("{context}: {e}"));
        if began.elapsed() > Duration::from_millis(500) {
            eprintln!("fuzz: slow case {case} {name}: {:?}", began.elapsed());
        }
        let envelope = fuzz_harness::envelope(&result);
        let code = envelope["error"]["code"].as_str().unwrap_or("");
        assert_eq!(result.is_error, Some(envelope["ok"] != true), "{context}");
        let requests = server.emulator.requests();
        if nothing_sent(code) {
            // The only requests a refusal may have made are the reads it owns up to.
            let read: Vec<&str> = envelope["error"]["details"]["read"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let unlisted: Vec<_> = requests
                .iter()
                .filter(|r| !read.contains(&format!("{} {}", r.method, r.path).as_str()))
                .collect();
            assert!(
                unlisted.is_empty(),
                "{context}: {code} but {unlisted:?} (listed as read: {read:?})"
            );
            if requests.is_empty() {
                refused += 1;
            }
        }
        let hint = envelope["error"]["hint"].as_str().unwrap_or("");
        assert!(
            requests.is_empty() || !hint.contains("Nothing was sent"),
            "{context}: the hint says nothing was sent, but {requests:?} were: {hint}"
        );
        if let Expect::Refused(why) = &expect {
            let short: String = args.to_string().chars().take(300).collect();
            assert_eq!(
                code, "TOOL_INPUT_REJECTED",
                "{context}: {why}: {short} → {envelope}"
            );
        } else {
            valid += 1;
        }
        if !requests.is_empty() {
            reached += 1;
        }
        for request in &requests {
            encoded_segments += check_path(&request.raw_path, &args, &context);
        }
        assert_eq!(
            PANICS.load(Ordering::SeqCst),
            0,
            "{context}: a panic occurred"
        );
    }
    eprintln!(
        "fuzz: {cases} cases over {} tools (seed {seed}): {valid} not-necessarily-invalid, {reached} reached Proxmox, {refused} refused with nothing sent, {encoded_segments} percent-encoded path segments checked",
        tools.len()
    );
    assert!(
        reached * 10 > cases,
        "too few cases reached the emulator: {reached}"
    );
    assert!(
        refused * 10 > cases,
        "too few cases were refused: {refused}"
    );
    // The server still answers after the whole run.
    let after = fuzz_harness::call(
        &server.client,
        "pve_list_nodes",
        json!({}),
        Duration::from_secs(30),
    )
    .await
    .expect("still answering");
    assert_eq!(after.is_error, Some(false));
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// On the fuzz runtime, whose threads (and only those, with this one) count panics.
#[test]
fn seeded_arguments_for_every_tool() {
    fuzz_harness::runtime().block_on(run_cases(
        setting("FUZZ_CASES", 1_000),
        setting("FUZZ_SEED", 0x5eed),
    ));
}

#[test]
#[ignore = "100,000 cases, minutes: cargo test --test it fuzz_tools:: -- --ignored"]
fn one_hundred_thousand_cases() {
    fuzz_harness::runtime().block_on(run_cases(
        setting("FUZZ_CASES", 100_000),
        setting("FUZZ_SEED", 0xf022),
    ));
}

/// Seed 0xf022, case 3095: `pve_api_call {"path":"/"}` is refused by the cluster's schema
/// after the lookup read `GET /version` and `apidata.js`; the refusal says what it read, and
/// only once the schema is in memory does it say nothing was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_after_the_schema_lookup_says_what_was_read() {
    let server = fuzz_harness::serve(fuzz_harness::emulator().await, EVERYTHING).await;
    // Another module's in-process server may have cached the emulator's schema in a file.
    fuzz_harness::forget_cached_schemas();
    let refuse = async |expect_read: bool| {
        server.emulator.clear_requests();
        let result = fuzz_harness::call(
            &server.client,
            "pve_api_call",
            // The effects gate asks for approval of a GET it cannot classify as a plain read.
            json!({"path": "/", "confirm": true}),
            Duration::from_secs(30),
        )
        .await
        .expect("answered");
        let envelope = fuzz_harness::envelope(&result);
        let error = &envelope["error"];
        assert_eq!(error["code"], "TOOL_INPUT_REJECTED", "{envelope}");
        let hint = error["hint"].as_str().unwrap_or("");
        let requests: Vec<String> = server
            .emulator
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        if expect_read {
            assert_eq!(requests, ["GET /version"], "{envelope}");
            assert_eq!(
                error["details"]["read"],
                json!(["GET /version", "GET /pve-docs/api-viewer/apidata.js"]),
                "{envelope}"
            );
            assert!(!hint.contains("Nothing was sent"), "{hint}");
            assert!(hint.contains("GET /version"), "{hint}");
        } else {
            assert!(requests.is_empty(), "{requests:?}");
            assert!(hint.contains("Nothing was sent"), "{hint}");
        }
    };
    refuse(true).await;
    refuse(false).await;
}
