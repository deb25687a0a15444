//! Documentation that cannot drift: the README's configuration section is generated from
//! the code, every relative link resolves, the registry descriptor matches Cargo.toml and
//! the configuration code, and the client entries the guides tell people to paste really
//! start the server. `UPDATE_DOCS=1` rewrites the generated parts.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use nandi_proxmox_mcp::config::{self, EnvVarDoc};
use nandi_proxmox_mcp::policy;
use serde_json::{Value, json};

const BEGIN: &str = "<!-- BEGIN GENERATED: configuration -->";
const END: &str = "<!-- END GENERATED: configuration -->";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `UPDATE_DOCS=1`, outside CI (under `CI=true` stale docs fail instead of being rewritten).
fn updating() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1") && !ci
}

/// Every environment variable a user may set, from the code (HOME/USERPROFILE excluded:
/// the operating system sets them).
fn user_env_vars() -> Vec<&'static EnvVarDoc> {
    config::ENV_VARS
        .iter()
        .chain(policy::ENV_VARS)
        .chain(nandi_proxmox_mcp::pve::ENV_VARS)
        .filter(|v| !matches!(v.name, "HOME" | "USERPROFILE"))
        .collect()
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn configuration_section() -> String {
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n\n| Variable | Meaning | Default |\n|---|---|---|\n");
    for var in user_env_vars() {
        out.push_str(&format!(
            "| `{}` | {}{} | {} |\n",
            var.name,
            cell(var.description),
            if var.secret {
                " (secret: never logged)"
            } else {
                ""
            },
            cell(var.default)
        ));
    }
    out.push_str("\nStreamable HTTP transport (`MCP_TRANSPORT=http`):\n\n| Variable | Meaning | Default |\n|---|---|---|\n");
    for var in nandi_proxmox_mcp::transport::http::VARS {
        out.push_str(&format!(
            "| `{}` | {}{} | {} |\n",
            var.name,
            cell(var.description),
            if var.secret {
                " (secret: never logged)"
            } else {
                ""
            },
            cell(var.default)
        ));
    }
    out.push_str("\nInstance file keys (`.nandi-proxmox-mcp/<name>.json`):\n\n| Key | Meaning | Required |\n|---|---|---|\n");
    for key in config::FILE_KEYS {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            key.key,
            cell(key.description),
            if key.required { "yes" } else { "no" }
        ));
    }
    out.push('\n');
    out.push_str(END);
    out
}

#[test]
fn readme_configuration_section_is_generated_from_the_code() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(stop)) = (readme.find(BEGIN), readme.find(END)) else {
        panic!("README.md lacks the generated configuration markers");
    };
    let current = &readme[start..stop + END.len()];
    let expected = configuration_section();
    if current != expected {
        if updating() {
            let updated = format!(
                "{}{}{}",
                &readme[..start],
                expected,
                &readme[stop + END.len()..]
            );
            std::fs::write(&path, updated).unwrap();
        } else {
            panic!(
                "README.md configuration section is stale; run UPDATE_DOCS=1 cargo test --test it docs::"
            );
        }
    }
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("CONTRIBUTING.md"),
        root().join("SECURITY.md"),
    ];
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            files.push(entry.path());
        }
    }
    files.sort();
    files
}

/// GitHub's heading anchor: lower case, spaces to hyphens, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            found.insert(slug(line.trim_start_matches('#')));
        }
    }
    found
}

fn links(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn relative_links_resolve_to_files_and_anchors() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (target, anchor) = match link.split_once('#') {
                Some((t, a)) => (t, Some(a)),
                None => (link.as_str(), None),
            };
            let target_path = if target.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(target)
            };
            if !target_path.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let body = std::fs::read_to_string(&target_path).unwrap_or_default();
                if !anchors(&body).contains(anchor) {
                    broken.push(format!("{}: {link} (no such anchor)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

fn cargo_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

fn descriptor_env() -> Vec<Value> {
    user_env_vars()
        .iter()
        .map(|v| {
            json!({
                "name": v.name,
                "description": v.description,
                "isRequired": false,
                "isSecret": v.secret,
            })
        })
        .collect()
}

/// The fixed entry of the OCI package: the image serves HTTP by default, a client that runs it
/// with `docker run -i` needs stdio.
fn oci_transport_env() -> Value {
    json!({
        "name": "MCP_TRANSPORT",
        "description": "stdio: the client talks to the container over docker run -i (the image defaults to http)",
        "value": "stdio",
        "isRequired": true,
        "isSecret": false,
    })
}

/// Fields the registry's `Package` schema allows (it sets `additionalProperties: false`).
const PACKAGE_FIELDS: &[&str] = &[
    "registryType",
    "registryBaseUrl",
    "identifier",
    "version",
    "fileSha256",
    "runtimeHint",
    "transport",
    "runtimeArguments",
    "packageArguments",
    "environmentVariables",
];

/// What the MCP Registry accepts for a native binary: an MCPB bundle attached to a GitHub
/// release (URL naming the version, SHA-256 of the file) and an OCI image on a supported
/// registry, tagged with the version. The committed `fileSha256` is the all-zero placeholder
/// that `scripts/release-dry-run` and the release workflow replace with the bundle's digest.
fn registry_acceptance_problems(doc: &Value, version: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let name = doc["name"].as_str().unwrap_or("");
    if !regex::Regex::new(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
        .unwrap()
        .is_match(name)
    {
        problems.push(format!("name {name:?} is not reverse-DNS/name"));
    }
    let description = doc["description"].as_str().unwrap_or("");
    if description.is_empty() || description.chars().count() > 100 {
        problems.push("description must have 1..=100 characters".into());
    }
    let packages = doc["packages"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = packages
        .iter()
        .map(|p| p["registryType"].as_str().unwrap_or(""))
        .collect();
    if kinds != ["mcpb", "oci"] {
        problems.push(format!("packages must be [mcpb, oci], found {kinds:?}"));
    }
    let sha = regex::Regex::new("^[a-f0-9]{64}$").unwrap();
    for package in &packages {
        for key in package.as_object().into_iter().flat_map(|o| o.keys()) {
            if !PACKAGE_FIELDS.contains(&key.as_str()) {
                problems.push(format!(
                    "package field {key:?} is not in the registry schema"
                ));
            }
        }
        let identifier = package["identifier"].as_str().unwrap_or("");
        match package["registryType"].as_str() {
            Some("mcpb") => {
                let expected = format!(
                    "https://github.com/NANDI-Services/proxmox-mcp/releases/download/v{version}/nandi-proxmox-mcp-{version}.mcpb"
                );
                if identifier != expected {
                    problems.push(format!("mcpb identifier {identifier:?} != {expected:?}"));
                }
                if !package["fileSha256"]
                    .as_str()
                    .is_some_and(|s| sha.is_match(s))
                {
                    problems.push("mcpb needs fileSha256 (64 lower-case hex digits)".into());
                }
                if package["version"] != version {
                    problems.push("mcpb version".into());
                }
            }
            Some("oci") => {
                let expected = format!("ghcr.io/nandi-services/nandi-proxmox-mcp:{version}");
                if identifier != expected {
                    problems.push(format!("oci identifier {identifier:?} != {expected:?}"));
                }
                if package.get("version").is_some() || package.get("registryBaseUrl").is_some() {
                    problems.push("oci carries its version in the tag only".into());
                }
            }
            other => problems.push(format!("registryType {other:?} is not accepted")),
        }
        if package["transport"]["type"] != "stdio" {
            problems.push(format!("{identifier}: transport must be stdio"));
        }
    }
    problems
}

#[test]
fn registry_descriptor_matches_cargo_and_config() {
    let path = root().join(".mcp/server.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let version = cargo_version();
    let expected_env = descriptor_env();
    let oci_env: Vec<Value> = std::iter::once(oci_transport_env())
        .chain(expected_env.iter().cloned())
        .collect();
    let mut stale = Vec::new();
    if doc["version"] != version.as_str() {
        stale.push("version");
    }
    if doc["packages"][0]["environmentVariables"] != Value::Array(expected_env.clone()) {
        stale.push("packages[0].environmentVariables");
    }
    if doc["packages"][1]["environmentVariables"] != Value::Array(oci_env.clone()) {
        stale.push("packages[1].environmentVariables");
    }
    let problems = registry_acceptance_problems(&doc, doc["version"].as_str().unwrap_or(""));
    assert!(problems.is_empty(), ".mcp/server.json: {problems:#?}");
    if stale.is_empty() {
        return;
    }
    assert!(
        updating(),
        ".mcp/server.json is stale ({stale:?}); run UPDATE_DOCS=1 cargo test --test it docs::"
    );
    let old = doc["version"].as_str().unwrap_or("").to_owned();
    doc["version"] = version.clone().into();
    doc["packages"][0]["version"] = version.clone().into();
    doc["packages"][0]["environmentVariables"] = Value::Array(expected_env);
    doc["packages"][1]["environmentVariables"] = Value::Array(oci_env);
    let text = serde_json::to_string_pretty(&doc)
        .unwrap()
        .replace(&format!("v{old}/"), &format!("v{version}/"))
        .replace(&format!("-{old}.mcpb"), &format!("-{version}.mcpb"))
        .replace(&format!("mcp:{old}\""), &format!("mcp:{version}\""));
    std::fs::write(&path, format!("{text}\n")).unwrap();
}

#[test]
fn the_registry_check_refuses_what_the_registry_refuses() {
    let text = std::fs::read_to_string(root().join(".mcp/server.json")).unwrap();
    let good: Value = serde_json::from_str(&text).unwrap();
    let version = cargo_version();
    assert!(registry_acceptance_problems(&good, &version).is_empty());
    let broken = |edit: &dyn Fn(&mut Value)| {
        let mut doc = good.clone();
        edit(&mut doc);
        registry_acceptance_problems(&doc, &version)
    };
    assert!(!broken(&|d| d["packages"][0]["registryType"] = "cargo".into()).is_empty());
    assert!(!broken(&|d| d["packages"][0]["fileSha256"] = "abc".into()).is_empty());
    assert!(!broken(&|d| d["packages"][1]["identifier"] = "ghcr.io/x/y:latest".into()).is_empty());
    assert!(!broken(&|d| d["packages"][1]["version"] = "0.1.0".into()).is_empty());
    assert!(!broken(&|d| d["packages"][0]["extra"] = true.into()).is_empty());
    assert!(!broken(&|d| d["description"] = "x".repeat(101).into()).is_empty());
}

#[test]
fn changelog_names_the_current_version() {
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    assert!(changelog.contains(&format!("## [{}]", cargo_version())));
}

/// The fenced JSON blocks of a guide that declare MCP servers.
fn client_entries(guide: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(guide).unwrap();
    let mut entries = Vec::new();
    let mut block: Option<String> = None;
    for line in text.lines() {
        match (&mut block, line.trim_start()) {
            (None, l) if l.starts_with("```json") => block = Some(String::new()),
            (Some(b), l) if l.starts_with("```") => {
                let doc: Value =
                    serde_json::from_str(b).unwrap_or_else(|e| panic!("{}: {e}", guide.display()));
                for key in ["mcpServers", "servers"] {
                    if let Some(servers) = doc[key].as_object() {
                        entries.extend(servers.values().cloned());
                    }
                }
                block = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    entries
}

/// A client entry from the guides, launched as a client would launch it (the binary found
/// on PATH by name, with the entry's args and env), answers a tool call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guide_client_entries_start_the_server() {
    let bin_dir = common::binary().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut launched = 0;
    for guide in ["docs/QUICKSTART.md", "docs/EMPEZAR.md"] {
        for entry in client_entries(&root().join(guide)) {
            assert_eq!(entry["command"], "nandi-proxmox-mcp", "{guide}");
            let args: Vec<&str> = entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let mut env: Vec<(String, String)> = vec![("PATH".into(), path.clone())];
            for (k, v) in entry["env"].as_object().into_iter().flatten() {
                env.push((k.clone(), v.as_str().unwrap().to_owned()));
            }
            let mut mcp = common::McpProcess::spawn_named("nandi-proxmox-mcp", &args, &env);
            mcp.initialize().await;
            let result = mcp.call("pve_list_nodes", json!({})).await;
            assert_eq!(common::envelope(&result)["ok"], true, "{guide}: {result}");
            launched += 1;
        }
    }
    assert!(launched >= 2, "the guides show a client entry");
}

/// The plain commands of the guides run and succeed.
#[test]
fn guide_commands_run() {
    let bin = common::binary();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (&["--version"], &[]),
        (&["tools"], &[]),
        (&["tools", "--json"], &[("PVE_ACCESS_TIER", "full")]),
    ];
    for (args, env) in cases {
        let home = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(&bin)
            .args(*args)
            .envs(env.iter().copied())
            .env("HOME", home.path())
            .current_dir(home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

const COUNT_BEGIN: &str = "<!-- tool-count -->";
const COUNT_END: &str = "<!-- /tool-count -->";

/// The README's claim about how many tools there are, from the registry (the definitions are
/// `docs::ToolCounts`, written at the top of docs/TOOLS.md).
fn tool_count_claim() -> String {
    let counts = nandi_proxmox_mcp::registry::tool_counts();
    format!(
        "up to {} Proxmox tools ({} with the defaults: read-only tier, core module)",
        counts.tools, counts.default
    )
}

const FIGURE_BEGIN: &str = "<!-- count:";
const FIGURE_END: &str = "<!-- /count -->";

/// Rewrites (UPDATE_DOCS=1) or checks every `<!-- count:NAME -->N<!-- /count -->` of `text`
/// against the registry's figure NAME; returns the text with the markers' figures current.
fn current_figures(guide: &str, text: &str) -> String {
    let counts = nandi_proxmox_mcp::registry::tool_counts();
    let marker = regex::Regex::new(r"<!-- count:([a-z-]+) -->([0-9]*)<!-- /count -->").unwrap();
    marker
        .replace_all(text, |c: &regex::Captures| {
            let name = &c[1];
            let Some((_, value)) = counts.named().into_iter().find(|(n, _)| *n == name) else {
                panic!("{guide}: no tool figure named {name:?} (docs::ToolCounts::named)");
            };
            format!("{FIGURE_BEGIN}{name} -->{value}{FIGURE_END}")
        })
        .into_owned()
}

/// Issue 12.9 and 38: the README's tool counts come from the registry (`UPDATE_DOCS=1`
/// rewrites them when tools are added), every generated figure in the docs is current, and no
/// README or docs/ page states another number of tools outside a generated marker, except in a
/// dated measurement (a paragraph saying "Measured" or naming a date, and the table after it).
#[test]
fn tool_counts_in_the_docs_come_from_the_registry() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (readme.find(COUNT_BEGIN), readme.find(COUNT_END)) else {
        panic!("README.md lacks the {COUNT_BEGIN}…{COUNT_END} claim");
    };
    let claimed = &readme[start + COUNT_BEGIN.len()..end];
    let expected = tool_count_claim();
    if claimed != expected && updating() {
        let text = format!(
            "{}{expected}{}",
            &readme[..start + COUNT_BEGIN.len()],
            &readme[end..]
        );
        std::fs::write(&path, text).unwrap();
    } else {
        assert_eq!(
            claimed, expected,
            "README.md's tool count (UPDATE_DOCS=1 to rewrite)"
        );
    }
    let mut guides = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        // docs/TOOLS.md is generated whole (tests/it/docs_tools.rs).
        if name.ends_with(".md") && name != "TOOLS.md" {
            guides.push(format!("docs/{name}"));
        }
    }
    let stated = regex::Regex::new(
        r"\b\d[\d,]* (?:(?:Proxmox|registered|served|default|catalog) )?(?:tools|herramientas)\b|\b\d+ legacy alias(?:es| names)?\b",
    )
    .unwrap();
    let figure = regex::Regex::new(r"<!-- count:[a-z-]+ -->[0-9]*<!-- /count -->").unwrap();
    let dated = regex::Regex::new(r"(?i)\bmeasured\b|\bmedido\b|\b20\d\d-\d\d-\d\d\b").unwrap();
    let mut wrong = Vec::new();
    for guide in &guides {
        let file = root().join(guide);
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let current = current_figures(guide, &text);
        if current != text {
            if updating() {
                std::fs::write(&file, &current).unwrap();
            } else {
                wrong.push(format!(
                    "{guide}: a generated tool figure is stale (UPDATE_DOCS=1 cargo test --test it docs::)"
                ));
            }
        }
        let outside_claim = match (current.find(COUNT_BEGIN), current.find(COUNT_END)) {
            (Some(a), Some(b)) => format!("{}{}", &current[..a], &current[b..]),
            _ => current.clone(),
        };
        let outside = figure.replace_all(&outside_claim, "");
        let mut previous_dated = false;
        for block in outside.split("\n\n") {
            let is_dated =
                dated.is_match(block) || (block.trim_start().starts_with('|') && previous_dated);
            previous_dated = is_dated;
            if is_dated {
                continue;
            }
            for m in stated.find_iter(block) {
                wrong.push(format!(
                    "{guide}: states {:?} outside a generated figure (use <!-- count:NAME -->…<!-- /count -->, names in docs::ToolCounts::named)",
                    m.as_str()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // `tools` and the registry's sentence use the same one-cluster figure.
    let counts = nandi_proxmox_mcp::registry::tool_counts();
    let full = nandi_proxmox_mcp::policy::Settings {
        tier: nandi_proxmox_mcp::catalog::Tier::Full,
        module: nandi_proxmox_mcp::catalog::Module::Advanced,
        ..Default::default()
    };
    let registry = nandi_proxmox_mcp::registry::Registry::build_for(
        &full,
        nandi_proxmox_mcp::registry::Capabilities::ALL,
    );
    assert!(
        registry.exposure(&full).starts_with(&format!(
            "{max} of {max} tools exposed, plus {} legacy alias names",
            counts.alias_names,
            max = counts.one_cluster_max
        )),
        "{}",
        registry.exposure(&full)
    );
    assert_eq!(
        counts.tools,
        counts.one_cluster_max + counts.multi_cluster_only
    );
}

/// Issue 12.6: the guides never tell people to keep the token secret in a file of their
/// project; their `setup` lines read it from standard input.
#[test]
fn guides_keep_the_token_secret_out_of_the_project() {
    for guide in ["docs/QUICKSTART.md", "docs/EMPEZAR.md", "README.md"] {
        let text = std::fs::read_to_string(root().join(guide)).unwrap();
        assert!(!text.contains("token.txt"), "{guide} mentions token.txt");
    }
    for guide in ["docs/QUICKSTART.md", "docs/EMPEZAR.md"] {
        let setups = guide_commands(guide, "setup");
        assert!(!setups.is_empty(), "{guide} shows no setup line");
        for words in setups {
            assert!(
                words.iter().any(|w| w == "--token-secret-stdin"),
                "{guide}: {words:?}"
            );
            assert!(
                !words.iter().any(|w| w.starts_with("--token-secret-file")),
                "{guide}: {words:?}"
            );
        }
    }
}

/// Issue 12.9: the guides say how to set up before the cluster is reachable, and name every
/// guest of the demo (the template VM 9000 included).
#[test]
fn guides_cover_skip_connectivity_and_the_demo_guests() {
    for guide in ["docs/QUICKSTART.md", "docs/EMPEZAR.md"] {
        let text = std::fs::read_to_string(root().join(guide)).unwrap();
        assert!(text.contains("--skip-connectivity"), "{guide}");
        for guest in ["101", "102", "9000", "201–203"] {
            assert!(
                text.contains(guest),
                "{guide} does not name demo guest {guest}"
            );
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("template VM 9000"), "README.md");
}

/// The shell lines of a guide that run `nandi-proxmox-mcp <command>` (continuations joined).
fn guide_commands(guide: &str, command: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(root().join(guide)).unwrap();
    let mut lines = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = trimmed == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        pending.push_str(trimmed.trim_end_matches('\\'));
        pending.push(' ');
        if trimmed.ends_with('\\') {
            continue;
        }
        let words: Vec<String> = pending.split_whitespace().map(str::to_owned).collect();
        pending.clear();
        if words.first().map(String::as_str) == Some("nandi-proxmox-mcp")
            && words.get(1).map(String::as_str) == Some(command)
        {
            lines.push(words[1..].to_vec());
        }
    }
    lines
}

/// The guides' own `bootstrap`, `setup`, `doctor` and `harden` lines, run as written except
/// that the connection values point at the emulator: bootstrap prints a script, setup writes
/// the files, doctor is all GREEN, harden reads the instance's tier (read-only: nothing to gate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guide_setup_sequence_runs_against_the_emulator() {
    let emu = common::emulator().await;
    let opts = pve_emulator::EmulatorOptions::default();
    for guide in ["docs/QUICKSTART.md", "docs/EMPEZAR.md"] {
        let dirs = common::CliDirs::new();
        let secret = format!("{}\n", opts.token_secret);
        for command in ["bootstrap", "setup", "doctor", "harden"] {
            let found = guide_commands(guide, command);
            assert!(!found.is_empty(), "{guide} shows no `{command}` line");
            for words in found {
                let mut args: Vec<String> = Vec::new();
                let mut iter = words.into_iter();
                while let Some(word) = iter.next() {
                    // Point the documented connection at the emulator, keep everything else.
                    let replacement = match word.as_str() {
                        "--proxmox-host" => Some(emu.host().to_owned()),
                        "--proxmox-user" => Some(opts.user.clone()),
                        "--token-name" => Some(opts.token_name.clone()),
                        _ => None,
                    };
                    args.push(word.clone());
                    if let Some(value) = replacement {
                        iter.next();
                        args.push(value);
                    }
                }
                if args[0] == "setup" {
                    args.extend([
                        "--proxmox-port".to_owned(),
                        emu.port().to_string(),
                        "--tls-fingerprint".to_owned(),
                        emu.cert_fingerprint().unwrap(),
                    ]);
                }
                let argv: Vec<&str> = args.iter().map(String::as_str).collect();
                let stdin = argv
                    .contains(&"--token-secret-stdin")
                    .then_some(secret.as_str());
                let out = dirs.run(&argv, &[], stdin).await;
                assert!(
                    out.status.success(),
                    "{guide}: {argv:?}\n{}",
                    common::text_of(&out)
                );
                let stdout = String::from_utf8_lossy(&out.stdout);
                if args[0] == "doctor" {
                    assert!(!stdout.contains("[RED]"), "{guide}: {stdout}");
                    assert!(stdout.contains("[GREEN]"), "{guide}: {stdout}");
                }
                if args[0] == "harden" {
                    assert!(
                        stdout.contains("tier read-only from its Claude Code entry"),
                        "{guide}: {stdout}"
                    );
                }
            }
        }
        assert!(
            dirs.cwd.path().join(".mcp.json").is_file(),
            "{guide}: no .mcp.json"
        );
        // At read-only the only tool whose calls can need a person is the generic API call
        // (a GET that reaches out): no other ask rule is written.
        let settings = std::fs::read_to_string(dirs.cwd.path().join(".claude/settings.json"))
            .unwrap_or_default();
        let rules: Vec<&str> = settings
            .split('"')
            .filter(|s| s.starts_with("mcp__"))
            .collect();
        assert!(
            rules.iter().all(|r| r.ends_with("__pve_api_call")),
            "{guide}: ask-rules for tools a read-only server does not gate: {rules:?}"
        );
    }
}

/// The shell lines of the maintainers' guides (release, agents, marketplace, contributing)
/// cannot run here (they tag, push, build for minutes), so each is checked for what can rot:
/// every `scripts/…` it names exists and is executable, every `--flag` it gives a script is one
/// the script reads, and every `cargo test --test NAME [MODULE::]` names a test crate (and a
/// module of it).
#[test]
fn maintainer_guides_name_real_scripts_flags_and_tests() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for guide in [
        "docs/RELEASE.md",
        "AGENTS.md",
        "docs/MARKETPLACE_GO_LIVE.md",
        "CONTRIBUTING.md",
    ] {
        let text = std::fs::read_to_string(root().join(guide)).unwrap();
        let mut in_sh = false;
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") {
                in_sh = !in_sh && trimmed == "```sh";
                continue;
            }
            if !in_sh {
                continue;
            }
            let command = trimmed.split('#').next().unwrap_or_default();
            let words: Vec<&str> = command.split_whitespace().collect();
            let script = words
                .iter()
                .position(|w| w.starts_with("scripts/"))
                .map(|i| (words[i], &words[i + 1..]));
            if let Some((script, rest)) = script {
                checked += 1;
                let path = root().join(script);
                let source = std::fs::read_to_string(&path).unwrap_or_default();
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let executable = std::fs::metadata(&path)
                        .map(|m| m.permissions().mode() & 0o111 != 0)
                        .unwrap_or(false);
                    if !executable {
                        problems.push(format!("{guide}: {script} is missing or not executable"));
                    }
                }
                for flag in rest
                    .iter()
                    .map(|w| w.trim_matches(['[', ']']))
                    .filter(|w| w.starts_with("--"))
                {
                    if !source.contains(flag) {
                        problems.push(format!("{guide}: {script} does not read {flag}"));
                    }
                }
            }
            if let Some(i) = words.iter().position(|w| *w == "--test") {
                let name = words.get(i + 1).copied().unwrap_or_default();
                if !name.starts_with('<') {
                    checked += 1;
                    if let Some(problem) = test_target_problem(name, words.get(i + 2).copied()) {
                        problems.push(format!("{guide}: {problem}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(checked >= 2, "the guides name scripts: {checked}");
}

/// Why `cargo test --test NAME [FILTER]` names no test, if it does not: NAME is a crate
/// (`tests/NAME.rs`, or `tests/NAME/main.rs` like `tests/it`), and a module filter `MODULE::…`
/// given to `tests/it` names one of its modules (`tests/it/MODULE.rs`).
fn test_target_problem(name: &str, filter: Option<&str>) -> Option<String> {
    let dir = root().join("tests").join(name);
    if root().join(format!("tests/{name}.rs")).is_file() {
        return None;
    }
    if !dir.join("main.rs").is_file() {
        return Some(format!("no tests/{name}.rs or tests/{name}/main.rs"));
    }
    let module = filter
        .filter(|f| !f.starts_with('-'))
        .and_then(|f| f.split_once("::"))
        .map(|(module, _)| module.trim_matches('`'))?;
    (!dir.join(format!("{module}.rs")).is_file() && !dir.join(module).join("mod.rs").is_file())
        .then(|| format!("no module {module} in tests/{name} (tests/{name}/{module}.rs)"))
}

/// Issue 38: the one-line CI descriptions of README.md and CONTRIBUTING.md name every step
/// `.ci/run` announces (`echo "== …"`): each step's header holds one of these words, and each
/// word is in both descriptions. A new step with none of them fails here until it is named.
#[test]
fn ci_descriptions_name_every_step_of_ci_run() {
    // (word in a step's header, what the descriptions must say for it)
    const STEPS: &[(&str, &str)] = &[
        ("toolchain", ""),
        ("fmt", "fmt"),
        ("clippy", "clippy"),
        ("cargo deny", "cargo deny"),
        ("advisories", "cargo deny"),
        ("sshd", "apt"),
        ("objdump", "apt"),
        ("MCPB", "npm"),
        ("Kubernetes", "Kubernetes"),
        ("workflows", "workflows"),
        ("tests", "tests"),
        ("root-only", "root-only"),
        ("fuzz", "fuzz"),
        ("cargo-auditable", "cargo auditable"),
        ("release build", "cargo auditable"),
        ("smoke", "smoke"),
        ("conformance", "conformance"),
        ("SBOM", "SBOM"),
        ("Debian package", ".deb"),
        ("static binary", "static binary"),
    ];
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let contributing = std::fs::read_to_string(root().join("CONTRIBUTING.md")).unwrap();
    let readme_line = readme
        .lines()
        .find(|l| l.starts_with("bash .ci/run"))
        .expect("README.md: the `bash .ci/run` line");
    let start = contributing
        .find("bash .ci/run")
        .expect("CONTRIBUTING.md: the `bash .ci/run` line");
    let contributing_text =
        &contributing[start..start + contributing[start..].find("```").unwrap()];
    let mut missing = Vec::new();
    for header in ci
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("step \"")
                .or_else(|| l.strip_prefix("echo \"== "))
        })
        .filter(|header| !header.starts_with('$') && !header.starts_with("step times"))
    {
        let Some((_, say)) = STEPS.iter().find(|(word, _)| header.contains(word)) else {
            missing.push(format!(
                ".ci/run step {header:?} is not in STEPS: name it in both descriptions"
            ));
            continue;
        };
        for (file, text) in [
            ("README.md", readme_line),
            ("CONTRIBUTING.md", contributing_text),
        ] {
            if !text.contains(say) {
                missing.push(format!(
                    "{file}'s CI description does not say {say:?} (step {header:?})"
                ));
            }
        }
    }
    missing.dedup();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Issue 38: README.md says how to point `setup` and `doctor` at the demo: the banner it quotes
/// is the one `run --demo` prints, and the token is the emulator's own.
#[test]
fn readme_says_how_to_point_setup_and_doctor_at_the_demo() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let run = std::fs::read_to_string(root().join("src/cli/run.rs")).unwrap();
    let banner = "DEMO MODE: connected to a built-in Proxmox emulator at ";
    assert!(
        run.contains(banner),
        "src/cli/run.rs no longer prints {banner:?}"
    );
    assert!(readme.contains(&format!("{banner}https://127.0.0.1:PORT")));
    let opts = pve_emulator::EmulatorOptions::default();
    for value in [
        &opts.user,
        &opts.realm,
        &opts.token_name,
        &opts.token_secret,
    ] {
        assert!(
            readme.contains(&format!("`{value}`")),
            "README.md does not name {value:?}"
        );
    }
    assert!(readme.contains("doctor --name demo"));
}
