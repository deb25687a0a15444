//! `bootstrap --pbs`: the commands that create the Proxmox Backup Server user and token this
//! server uses, with PBS's built-in roles for the tier — printed, never run.
//!
//! PBS has no custom roles, so the grants are its own: `DatastoreAudit` (and `RemoteAudit`
//! for the sync jobs' remotes) for reads; `DatastoreReader` adds `Datastore.Verify` for a
//! verification at read-execute (it also lets the token read backup contents, which this
//! server still asks about as a sensitive read); `DatastoreAdmin` and `RemoteSyncOperator`
//! for prune, garbage collection, protection and sync runs at full. A token's rights are
//! the intersection of its own ACL and its user's, so both are granted. Invariant: what the
//! tier's PBS rows need (their endpoints' privileges in PBS's schema) is covered by the roles
//! printed — `doctor` checks it against the token's real permissions.

use std::collections::BTreeSet;

use crate::catalog::{self, Tier};
use crate::effects::pbs::pbs_endpoints_for_template;

/// The `(ACL path, role)` grants for `tier`: one role per path, each tier's including the
/// one below's.
pub fn grants(tier: Tier) -> [(&'static str, &'static str); 2] {
    match tier {
        Tier::ReadOnly => [("/datastore", "DatastoreAudit"), ("/remote", "RemoteAudit")],
        Tier::ReadExecute => [
            ("/datastore", "DatastoreReader"),
            ("/remote", "RemoteAudit"),
        ],
        Tier::Full => [
            ("/datastore", "DatastoreAdmin"),
            ("/remote", "RemoteSyncOperator"),
        ],
    }
}

/// The privileges the PBS rows at or below `tier` name (each row needs one of its
/// endpoint's: PBS's checks are mostly "either … or …").
pub fn privileges_named(tier: Tier) -> BTreeSet<String> {
    catalog::all()
        .filter(|s| s.tier <= tier)
        .filter_map(|s| s.backend.pbs_method_and_path())
        .flat_map(|(m, p)| pbs_endpoints_for_template(m.as_str(), p))
        .flat_map(|e| e.privileges.iter().cloned())
        .collect()
}

/// The shell lines to run on the PBS as root.
pub fn script(user: &str, realm: &str, token: &str, tier: Tier) -> String {
    let account = format!("{user}@{realm}");
    let auth_id = format!("{account}!{token}");
    let mut out = String::new();
    out.push_str("bash -e <<'NANDI_PBS_BOOTSTRAP'\n");
    out.push_str("# 1. The API user (created only when it does not exist yet).\n");
    out.push_str(&format!(
        "proxmox-backup-manager user list --output-format json | grep -q '\"userid\":\"{account}\"' || proxmox-backup-manager user create {account} --comment nandi-proxmox-mcp\n"
    ));
    out.push_str(&format!(
        "# 2. PBS's built-in roles for the {} tools, to the user and to its token\n#    (a token can never do more than its user).\n",
        tier.as_str()
    ));
    for (path, role) in grants(tier) {
        out.push_str(&format!(
            "proxmox-backup-manager acl update {path} {role} --auth-id '{account}'\n"
        ));
        out.push_str(&format!(
            "proxmox-backup-manager acl update {path} {role} --auth-id '{auth_id}'\n"
        ));
    }
    out.push_str("# 3. The token. The secret is shown ONCE: copy the \"value\" field.\n");
    out.push_str(&format!(
        "proxmox-backup-manager user generate-token {account} {token}\n"
    ));
    out.push_str("NANDI_PBS_BOOTSTRAP\n");
    out
}

/// Prints the PBS bootstrap for `tier`.
pub fn print(user: &str, realm: &str, token: &str, tier: Tier) {
    println!(
        "nandi-proxmox-mcp bootstrap --pbs — tier {} (prints only; contacts nothing, writes nothing)",
        tier.as_str()
    );
    println!("\nRun these commands as root on the Proxmox Backup Server:\n");
    println!("--- copy from here ---");
    print!("{}", script(user, realm, token, tier));
    println!("--- to here ---\n");
    println!(
        "Then add the PBS to the instance file's `pbs` list (or set PBS_HOST, PBS_USER={user},"
    );
    println!(
        "PBS_REALM={realm}, PBS_TOKEN_NAME={token}, PBS_TOKEN_SECRET and PBS_TLS_FINGERPRINT — the"
    );
    println!(
        "fingerprint `proxmox-backup-manager cert info` prints), and run `nandi-proxmox-mcp doctor`."
    );
    println!(
        "The {} PBS tools name these privileges: {}.",
        tier.as_str(),
        privileges_named(tier)
            .into_iter()
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tier_grants_to_user_and_token_and_adds_to_the_last() {
        let read = script("mcp", "pbs", "mcp", Tier::ReadOnly);
        assert!(read.contains("acl update /datastore DatastoreAudit --auth-id 'mcp@pbs'"));
        assert!(read.contains("acl update /datastore DatastoreAudit --auth-id 'mcp@pbs!mcp'"));
        assert!(!read.contains("DatastoreAdmin"), "{read}");
        let full = script("mcp", "pbs", "mcp", Tier::Full);
        assert!(full.contains("DatastoreAdmin") && full.contains("RemoteSyncOperator"));
        // What the read tools need is an auditor's (and, for a prune's dry run, PBS's prune
        // privilege); reading a sync job's remote comes in at full.
        assert!(privileges_named(Tier::ReadOnly).contains("Datastore.Audit"));
        assert!(!privileges_named(Tier::ReadOnly).contains("Remote.Read"));
        assert!(privileges_named(Tier::ReadExecute).contains("Datastore.Verify"));
        assert!(privileges_named(Tier::Full).contains("Remote.Read"));
    }
}
