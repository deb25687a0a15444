//! The gate: does this call, with these arguments, need approval before anything is sent?
//!
//! Read from the row alone — `confirm: true` gates every call, `gated_when` gates the calls
//! whose arguments fire a rule — so what `tools --json`, docs/TOOLS.md and the threat model
//! say about a tool is exactly what happens at run time. Invariant: evaluation is pure (no
//! I/O) and runs on validated arguments, before approval, dry-run or dispatch.

use crate::catalog::{ArgRule, ToolSpec};
use crate::schema::ValidArgs;

/// Why a call needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The tool gates every call (`confirm: true`).
    pub always: bool,
    /// The argument rules this call fired.
    pub fired: Vec<&'static ArgRule>,
}

impl Gate {
    /// One line per reason, for the person's question and for refusals.
    pub fn reasons(&self) -> Vec<String> {
        self.fired
            .iter()
            .map(|rule| format!("{}: {}", rule.condition(), rule.why))
            .collect()
    }

    /// The gate decision as a short machine-readable word for results and the audit trail.
    pub fn kind(&self) -> &'static str {
        if self.always { "always" } else { "arguments" }
    }
}

/// Evaluates the row's gate for validated arguments; `None` when the call is routine.
pub fn evaluate(spec: &'static ToolSpec, args: &ValidArgs) -> Option<Gate> {
    let fired: Vec<&'static ArgRule> = spec
        .gated_when
        .iter()
        .filter(|rule| {
            let values = wire_values(args, rule.param);
            rule.fires(&values.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    (spec.confirm || !fired.is_empty()).then_some(Gate {
        always: spec.confirm,
        fired,
    })
}

/// The wire values given for `param`: its own value(s), or every key of its indexed family.
fn wire_values(args: &ValidArgs, param: &str) -> Vec<String> {
    let mut values: Vec<String> = args
        .values
        .get(param)
        .map(|v| v.wire_values())
        .unwrap_or_default();
    values.extend(
        args.indexed
            .values()
            .filter(|(family, _)| family.name == param)
            .flat_map(|(_, v)| v.wire_values()),
    );
    values
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog;
    use crate::schema;

    fn spec(name: &str) -> &'static ToolSpec {
        catalog::all()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} in catalog"))
    }

    fn gate(name: &str, args: serde_json::Value) -> Option<Gate> {
        let spec = spec(name);
        let args = schema::validate(spec, args.as_object()).expect("valid arguments");
        evaluate(spec, &args)
    }

    #[test]
    fn one_guest_snapshot_backup_is_routine() {
        assert_eq!(
            gate("pve_run_backup", json!({"node": "pve01", "vmid": "101"})),
            None
        );
        assert_eq!(
            gate(
                "pve_run_backup",
                json!({"node": "pve01", "vmid": "101", "mode": "snapshot"})
            ),
            None
        );
    }

    #[test]
    fn mail_all_stop_and_prune_gate_a_backup() {
        for args in [
            json!({"node": "pve01", "vmid": "101", "mailto": "x@exfil.example"}),
            json!({"node": "pve01", "all": true}),
            json!({"node": "pve01", "vmid": "101", "mode": "stop"}),
            json!({"node": "pve01", "vmid": "101", "remove": true}),
        ] {
            let gate = gate("pve_run_backup", args.clone()).expect("gated");
            assert!(!gate.always, "{args}");
            assert_eq!(gate.fired.len(), 1, "{args}");
        }
    }

    #[test]
    fn privileged_container_and_family_keys_gate_a_create() {
        let base = json!({"node": "pve01", "vmid": 200, "ostemplate": "local:vztmpl/debian-12.tar.zst", "unprivileged": true});
        assert_eq!(gate("pve_lxc_create", base.clone()), None);
        let mut privileged = base.clone();
        privileged["unprivileged"] = json!(false);
        assert!(gate("pve_lxc_create", privileged).is_some());
        let mut without = base.clone();
        without.as_object_mut().map(|o| o.remove("unprivileged"));
        assert!(gate("pve_lxc_create", without).is_some());
        let mut mount = base;
        mount["mp0"] = json!("/srv/host,mp=/mnt/host");
        let fired = gate("pve_lxc_create", mount).expect("gated").fired;
        assert_eq!(fired[0].param, "mp");
    }

    #[test]
    fn confirm_tools_are_always_gated() {
        let gate = gate("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101})).expect("gated");
        assert!(gate.always);
        assert!(gate.fired.is_empty());
    }
}
