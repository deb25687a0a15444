//! `bootstrap`: print the `pveum` commands that create the API user, a role for the chosen tier
//! and a token — contacting nothing; with `--new-ssh-key` it also writes a key pair (and says
//! where, in its first line).
//!
//! Invariants: the role of a tier holds exactly the privileges that tier's tools need (the union
//! of [`crate::catalog::privileges::TOOL_PRIVILEGES`] rows, generated from the official API schema and
//! the per-key checks of `privileges_keys`); the role is granted on `--acl-path` (default `/`),
//! validated as a Proxmox ACL path before anything is printed, and privileges that path cannot
//! cover are named; the printed script runs in `bash -e` and stops at the first real failure
//! (no `|| echo` masking); a privilege the node's Proxmox VE version does not have (PVE 8 has no
//! `VM.GuestAgent.*`) is left out of the role with a note instead of failing the script, and no
//! broader substitute is ever granted for it; a private key is never printed or authorised.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;

use super::setup::DEFAULT_SSH_KEY;
use super::{CliError, sshkey};
use crate::catalog::privileges::TOOL_PRIVILEGES;
use crate::catalog::{self, Tier};
use crate::config::{ProcessEnv, home_dir};

/// Flags of `bootstrap`.
#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// API user to create (without realm).
    #[arg(long, default_value = "mcp")]
    pub user: String,
    /// Realm of the user.
    #[arg(long, default_value = "pve")]
    pub realm: String,
    /// Token id to create.
    #[arg(long, default_value = "nandi")]
    pub token_name: String,
    /// Access tier the role is for: read-only, read-execute or full.
    #[arg(long, default_value = "read-only")]
    pub tier: String,
    /// Public key to authorise for SSH (with --new-ssh-key: where to create the key pair).
    #[arg(long, value_name = "PATH")]
    pub ssh_key: Option<PathBuf>,
    /// Generate an ed25519 key pair first (default path ~/.ssh/id_ed25519_proxmox, which is
    /// also setup's default).
    #[arg(long)]
    pub new_ssh_key: bool,
    /// ACL path the role is granted on: `/` (everything), or narrower, e.g. `/pool/NAME` (only
    /// the guests and storages of that pool).
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub acl_path: String,
    /// A person who will act with their own Proxmox identity (`PVE_PEOPLE_FILE`): their user,
    /// `USER@REALM`; repeat for each. Each gets their own token with privilege separation, so
    /// it can never do more than the person may.
    #[arg(long = "person", value_name = "USER@REALM")]
    pub people: Vec<String>,
    /// Print the commands for a Proxmox Backup Server instead (run on the PBS; the realm
    /// defaults to `pbs` there).
    #[arg(long)]
    pub pbs: bool,
}

/// First segments of the ACL paths Proxmox knows.
const ACL_ROOTS: &[&str] = &[
    "access", "mapping", "nodes", "pool", "sdn", "storage", "vms",
];

/// Checks `--acl-path`: `/`, or `/<root>/<segment>…` with a root Proxmox knows and segments of
/// `[A-Za-z0-9][A-Za-z0-9._-]*` (no empty, `.` or `..` segment, no trailing `/`).
pub fn check_acl_path(raw: &str) -> Result<String, CliError> {
    let path = raw.trim();
    if path == "/" {
        return Ok(path.to_owned());
    }
    let invalid = |why: &str| {
        CliError::Config(format!(
            "--acl-path `{raw}` {why}; use / or a Proxmox ACL path such as /pool/NAME, /vms/100 or \
             /storage/local"
        ))
    };
    let Some(rest) = path.strip_prefix('/') else {
        return Err(invalid("must start with /"));
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let segment_ok = |s: &str| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if !segments.iter().all(|s| segment_ok(s)) {
        return Err(invalid(
            "has an empty or invalid segment (allowed: letters, digits, . _ -)",
        ));
    }
    if !ACL_ROOTS.contains(&segments[0]) {
        return Err(invalid(&format!(
            "does not start with one of /{}",
            ACL_ROOTS.join(", /")
        )));
    }
    if segments[0] == "pool" && segments.len() < 2 {
        return Err(invalid("names no pool"));
    }
    Ok(path.to_owned())
}

/// Whether a grant on `acl_path` reaches a privilege checked on `need_path` (a template such as
/// `/vms/{vmid}`): `/` reaches everything; a pool reaches its guests and storages; any other
/// path only the objects below its own root.
pub fn acl_path_covers(acl_path: &str, need_path: &str) -> bool {
    if acl_path == "/" {
        return true;
    }
    let root = |p: &str| p.split('/').nth(1).unwrap_or_default().to_owned();
    if acl_path.starts_with("/pool/") {
        return need_path.starts_with("/vms/")
            || need_path.starts_with("/storage/")
            || need_path.starts_with("/pool/");
    }
    let acl_root = root(acl_path);
    need_path != "/" && root(need_path) == acl_root
}

/// The `(privilege, path)` pairs the tools of `tier` need that a grant on `acl_path` misses.
fn uncovered(tier: Tier, acl_path: &str) -> BTreeSet<(&'static str, &'static str)> {
    TOOL_PRIVILEGES
        .iter()
        .filter(|(tool, _)| catalog::find(tool).is_some_and(|spec| spec.tier <= tier))
        .flat_map(|(_, needs)| needs.iter())
        .filter(|(path, _)| !acl_path_covers(acl_path, path))
        .map(|(path, privilege)| (*privilege, *path))
        .collect()
}

/// The dedicated role of a tier.
pub fn role_name(tier: Tier) -> &'static str {
    match tier {
        Tier::ReadOnly => "NandiMcpReadOnly",
        Tier::ReadExecute => "NandiMcpReadExecute",
        Tier::Full => "NandiMcpFull",
    }
}

/// Privileges the tools of `tier` (and the tiers below it) need, sorted.
pub fn privileges_for(tier: Tier) -> BTreeSet<&'static str> {
    TOOL_PRIVILEGES
        .iter()
        .filter(|(tool, _)| catalog::find(tool).is_some_and(|spec| spec.tier <= tier))
        .flat_map(|(_, needs)| needs.iter().map(|(_, privilege)| *privilege))
        .collect()
}

fn check_id(flag: &str, value: &str) -> Result<String, CliError> {
    let v = value.trim();
    let mut chars = v.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(v.to_owned())
    } else {
        Err(CliError::Config(format!(
            "{flag} `{value}` must match ^[A-Za-z0-9][A-Za-z0-9._-]*$"
        )))
    }
}

/// Checks a `--person` value: `user@realm`, each part as `check_id` wants it.
fn check_person(value: &str) -> Result<(String, String), CliError> {
    let bad = || {
        CliError::Config(format!(
            "--person `{value}` must be USER@REALM (each part matching ^[A-Za-z0-9][A-Za-z0-9._-]*$)"
        ))
    };
    let (user, realm) = value.trim().split_once('@').ok_or_else(bad)?;
    let user = check_id("--person", user).map_err(|_| bad())?;
    let realm = check_id("--person", realm).map_err(|_| bad())?;
    Ok((user, realm))
}

/// The script's part for the people of `--person`: per person, the user (in the `pve` realm
/// only, created when missing — other realms' users come from their directory), a token with
/// privilege separation, and the tier's role on the token. The token's rights are then the
/// role's *and* the person's own: never more than the person may do in Proxmox.
fn people_script(
    step: u8,
    people: &[(String, String)],
    token: &str,
    acl_path: &str,
    role: &str,
) -> String {
    let mut out = format!(
        "# {step}. One token per person (per-person identity, PVE_PEOPLE_FILE). --privsep 1: each\n\
         #    token can do what the role allows AND what the person may do themself, never\n\
         #    more; a person without rights of their own needs a grant (e.g. on a pool).\n",
    );
    for (user, realm) in people {
        let account = format!("{user}@{realm}");
        if realm == "pve" {
            out.push_str(&format!(
                "pveum user list --output-format json | grep -q '\"userid\":\"{account}\"' || pveum user add {account} --comment \"nandi-proxmox-mcp person\"\n"
            ));
        } else {
            out.push_str(&format!(
                "#    {account} must exist in realm {realm} (sync the realm first).\n"
            ));
        }
        out.push_str(&format!(
            "pveum user token add {account} {token} --privsep 1\n"
        ));
        out.push_str(&format!(
            "pveum acl modify {acl_path} --tokens '{account}!{token}' --roles {role}\n"
        ));
    }
    out
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Reads and checks a public key file: no private key, a known key type.
fn read_public_key(path: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Config(format!("cannot read {}: {e}", path.display())))?;
    if text.contains("PRIVATE KEY") {
        return Err(CliError::Config(format!(
            "{} is a PRIVATE key; pass the public key ({}.pub)",
            path.display(),
            path.display()
        )));
    }
    let line = text.trim().to_owned();
    let known = ["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-", "sk-ssh-"];
    let mut parts = line.splitn(2, char::is_whitespace);
    let kind = parts.next().unwrap_or_default();
    let valid = known.iter().any(|k| kind.starts_with(k))
        && (kind.starts_with("ecdsa-sha2-")
            || kind.starts_with("sk-ssh-")
            || known.contains(&kind))
        && parts.next().is_some_and(|rest| !rest.trim().is_empty())
        && !line.contains('\n');
    if !valid {
        return Err(CliError::Config(format!(
            "{} is not an OpenSSH public key (one line starting with ssh-ed25519, ssh-rsa, \
             ecdsa-sha2-* or sk-ssh-*)",
            path.display()
        )));
    }
    Ok(line)
}

/// Privileges of the tier roles that older Proxmox VE releases do not have: before PVE 9 there
/// is no `VM.GuestAgent.*` (the guest agent needed `VM.Monitor`), before PVE 8.2 no
/// `Sys.AccessNetwork`. `pveum role add` refuses an unknown privilege.
pub const NEWER_PRIVILEGES: &[&str] = &[
    "VM.GuestAgent.Audit",
    "VM.GuestAgent.FileRead",
    "VM.GuestAgent.FileWrite",
    "VM.GuestAgent.FileSystemMgmt",
    "VM.GuestAgent.Unrestricted",
    "Sys.AccessNetwork",
];

/// The script lines that create (or update) `role` with `privs`. The node it runs on decides:
/// a privilege no role of that node lists (the built-in Administrator role holds them all) does
/// not exist in its Proxmox VE version, so it is left out and named, rather than failing the
/// whole script on PVE 8. `VM.Monitor` is never added on its own: on PVE 8 it also lets the token
/// run commands in guests through the agent, so the note leaves that choice to the person.
fn role_script(role: &str, privs: &[&str]) -> String {
    let mut out = String::new();
    if privs.iter().any(|p| NEWER_PRIVILEGES.contains(p)) {
        out.push_str(
            "#    A privilege this Proxmox VE does not have (before PVE 9: VM.GuestAgent.*) is\n\
             #    left out with a note; the tools that need it then get 403.\n",
        );
    }
    out.push_str("known=\"$(pveum role list --output-format json)\"\nprivs=\"\"; missing=\"\"\n");
    out.push_str(&format!("for p in {}; do\n", privs.join(" ")));
    out.push_str(
        "  if printf '%s' \"$known\" | grep -qE \"[\\\",]$p[\\\",]\"; then privs=\"$privs${privs:+,}$p\"; \
         else missing=\"$missing $p\"; fi\ndone\n",
    );
    out.push_str(
        "[ -n \"$privs\" ] || { echo \"cannot read the privileges from pveum role list\" >&2; exit 1; }\n",
    );
    out.push_str(&format!(
        "if [ -n \"$missing\" ]; then echo \"note: this Proxmox VE has no$missing (older than PVE 9?): left \
         out of {role}; the tools needing them get 403. On PVE 8 the guest-agent tools need \
         VM.Monitor instead, which also lets the token run commands inside guests through the \
         agent; add it only if that is acceptable: pveum role modify {role} --privs VM.Monitor \
         --append 1\"; fi\n"
    ));
    out.push_str(&format!(
        "if printf '%s' \"$known\" | grep -q '\"roleid\":\"{role}\"'; then pveum role modify {role} \
         --privs \"$privs\"; else pveum role add {role} --privs \"$privs\"; fi"
    ));
    out
}

/// Runs `bootstrap`.
pub fn run(args: BootstrapArgs) -> Result<(), CliError> {
    let user = check_id("--user", &args.user)?;
    let realm = check_id("--realm", &args.realm)?;
    let token = check_id("--token-name", &args.token_name)?;
    let tier = Tier::parse(&args.tier).ok_or_else(|| {
        CliError::Config(format!(
            "--tier `{}` is not a tier; valid tiers: read-only, read-execute, full",
            args.tier
        ))
    })?;
    if args.pbs {
        // PBS has no `pve` realm: the default realm there is its own user database.
        let realm = if realm == "pve" {
            "pbs".to_owned()
        } else {
            realm
        };
        super::bootstrap_pbs::print(&user, &realm, &token, tier);
        return Ok(());
    }
    let acl_path = check_acl_path(&args.acl_path)?;
    let people = args
        .people
        .iter()
        .map(|p| check_person(p))
        .collect::<Result<Vec<_>, _>>()?;
    let account = format!("{user}@{realm}");
    let role = role_name(tier);
    let privs: Vec<&str> = privileges_for(tier).into_iter().collect();

    let mut key_line = None;
    let new_key = if args.new_ssh_key {
        let path = match &args.ssh_key {
            Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            None => home_dir(&ProcessEnv)
                .ok_or_else(|| CliError::Config("HOME is not set; pass --ssh-key PATH".into()))?
                .join(DEFAULT_SSH_KEY),
        };
        Some(path)
    } else {
        None
    };
    // Say what this run does to this machine: nothing is contacted; only a new key pair is
    // written.
    let effect = match &new_key {
        Some(path) if !path.exists() => format!(
            "contacts nothing; writes a new SSH key pair {} and {}, then prints",
            path.display(),
            sshkey::pub_path(path).display()
        ),
        _ => "prints only; contacts nothing, writes nothing".to_owned(),
    };
    println!(
        "nandi-proxmox-mcp bootstrap — tier {} ({effect})",
        tier.as_str()
    );
    if let Some(path) = new_key {
        if path.exists() {
            let public = sshkey::pub_path(&path);
            if !public.exists() {
                return Err(CliError::Config(format!(
                    "{} exists but {} does not; recreate it with `ssh-keygen -y -f {} > {}`",
                    path.display(),
                    public.display(),
                    path.display(),
                    public.display()
                )));
            }
            println!("Reusing the existing key {}", path.display());
            key_line = Some(read_public_key(&public)?);
        } else {
            let key = sshkey::generate(&path, "nandi-proxmox-mcp").map_err(CliError::Runtime)?;
            println!(
                "Generated an ed25519 key pair: {} (private, mode 0600) and {}",
                key.private.display(),
                key.public.display()
            );
            key_line = Some(key.public_line);
        }
    } else if let Some(p) = &args.ssh_key {
        key_line = Some(read_public_key(p)?);
    }

    println!("\nRun these commands as root on any node of the cluster (a shell on the node, or");
    println!("Datacenter > node > Shell in the web UI):\n");
    println!("--- copy from here ---");
    // A child shell with -e stops at the first real failure without closing the pasting
    // user's own shell (a bare `set -e` pasted interactively would log them out on an error).
    println!("bash -e <<'NANDI_BOOTSTRAP'");
    println!("# 1. The API user (created only when it does not exist yet).");
    println!(
        "pveum user list --output-format json | grep -q '\"userid\":\"{account}\"' || pveum user add {account} --comment \"nandi-proxmox-mcp\""
    );
    println!(
        "# 2. A role with exactly the {} privileges the {} tools need (docs/PERMISSIONS.md).",
        privs.len(),
        tier.as_str()
    );
    println!("{}", role_script(role, &privs));
    println!("pveum acl modify {acl_path} --users {account} --roles {role}");
    let missed = uncovered(tier, &acl_path);
    if !missed.is_empty() {
        println!(
            "#    Note: a grant on {acl_path} does not reach these checks; the tools needing them"
        );
        println!("#    get 403 unless the role is also granted where they apply:");
        let listed: Vec<String> = missed
            .iter()
            .map(|(privilege, path)| format!("{privilege} on {path}"))
            .collect();
        for chunk in listed.chunks(4) {
            println!("#      {}", chunk.join(", "));
        }
    }
    println!("# 3. The token. --privsep 0: the token acts with the user's role (a token with");
    println!("#    privilege separation starts with no permissions and every call fails).");
    println!("#    The secret is shown ONCE: copy the \"value\" field. This fails if the token");
    println!("#    exists: remove it first with `pveum user token remove {account} {token}`.");
    println!("pveum user token add {account} {token} --privsep 0");
    if let Some(line) = &key_line {
        println!("# 4. Authorise the SSH key (/root/.ssh/authorized_keys is shared by all nodes");
        println!("#    through /etc/pve, so once is enough for the whole cluster).");
        println!("mkdir -p /root/.ssh && chmod 700 /root/.ssh");
        let q = quote(line);
        println!("grep -qxF {q} /root/.ssh/authorized_keys 2>/dev/null || \\");
        println!("  echo {q} >> /root/.ssh/authorized_keys");
        println!("chmod 600 /root/.ssh/authorized_keys");
    }
    if !people.is_empty() {
        let step = if key_line.is_some() { 5 } else { 4 };
        print!("{}", people_script(step, &people, &token, &acl_path, role));
    }
    println!("NANDI_BOOTSTRAP");
    println!("--- to here ---\n");
    if !people.is_empty() {
        println!("Then write the people file (mode 0600; PVE_PEOPLE_FILE, docs/DEPLOY.md): each");
        println!("person's OAuth subject (`sub`) and the secret their `token add` printed:");
        let entries: Vec<String> = people
            .iter()
            .map(|(user, realm)| {
                format!(
                    "    \"<{user}'s OAuth sub>\": {{\"tokenId\": \"{user}@{realm}!{token}\", \"secret\": \"<secret>\"}}"
                )
            })
            .collect();
        println!(
            "  {{\"unmapped\": \"refuse\", \"people\": {{\n{}\n  }}}}\n",
            entries.join(",\n")
        );
    }
    println!("Then, on this machine:");
    println!(
        "  nandi-proxmox-mcp setup --access-tier {} (the wizard asks for the host and the secret)",
        tier.as_str()
    );
    if key_line.is_none() {
        println!(
            "No SSH key given: the REST tools need none (add --new-ssh-key for container commands)."
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_paths_are_checked() {
        for ok in [
            "/",
            "/pool/lab",
            "/pool/team.a/web-1",
            "/vms/100",
            "/storage/local",
        ] {
            assert_eq!(check_acl_path(ok).unwrap(), ok);
        }
        for bad in [
            "",
            "pool/lab",
            "/pool",
            "/pool/",
            "/pool//lab",
            "/pool/../x",
            "/pool/lab;id",
            "/pool/lab space",
            "/bogus/x",
            "//",
        ] {
            assert!(check_acl_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_pool_reaches_its_guests_and_storages_only() {
        assert!(acl_path_covers("/", "/nodes/{node}"));
        assert!(acl_path_covers("/pool/lab", "/vms/{vmid}"));
        assert!(acl_path_covers("/pool/lab", "/storage/{storage}"));
        assert!(!acl_path_covers("/pool/lab", "/"));
        assert!(!acl_path_covers("/pool/lab", "/nodes/{node}"));
        assert!(!acl_path_covers(
            "/pool/lab",
            "/sdn/zones/localnetwork/{bridge}"
        ));
        assert!(acl_path_covers("/vms/100", "/vms/{vmid}"));
        assert!(!acl_path_covers("/vms/100", "/storage/{storage}"));
        assert!(uncovered(Tier::Full, "/").is_empty());
        assert!(
            uncovered(Tier::ReadOnly, "/pool/lab")
                .iter()
                .any(|(p, path)| *p == "Sys.Audit" && *path == "/nodes/{node}")
        );
    }
}
