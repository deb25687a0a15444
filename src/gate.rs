//! The gate: what will this call's requests do, and does that need a person?
//!
//! [`plan`] classifies the requests a call is about to send with the effects classifier
//! (`effects`): a REST row's one request as `backends::build_request` renders it, a generic
//! API call's request from its `method`/`path`/`params`, a composite's or SSH operation's
//! known requests. [`evaluate`] turns that into the decision — a pure function of the effects,
//! the row's own rules (`confirm`, `gated_when`, which may add to it and never remove) and the
//! tier: any effect beyond a plain read needs a person; a sensitive read also needs `full`.
//!
//! Invariant: the gate's effects are also the clearance the call runs with
//! ([`Gate::clearance`]), and the REST client and SSH entry refuse any request beyond it — so
//! if the plan ever under-states a request, the request is refused, never sent unasked.

use crate::catalog::{ArgRule, Backend, CompositeOp, HttpMethod, Tier, ToolSpec};
use crate::effects::routine::Routine;
use crate::effects::{self, Classified, Effect, EffectSet};
use crate::envelope::{ToolFailure, codes};
use crate::schema::{ArgValue, ValidArgs};

/// Why a call needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The tool gates every call (`confirm: true`).
    pub always: bool,
    /// The argument rules this call fired.
    pub fired: Vec<&'static ArgRule>,
    /// What the call's requests do.
    pub planned: Classified,
    /// The request is a routine change (`effects::routine`): it may run without a person
    /// once the target's facts and the operator's settings allow it (decided in the pipeline).
    /// Never set for a `confirm` row, a call that fired a row rule, or a call that does
    /// anything beyond a routine change.
    pub routine: Option<Routine>,
}

impl Gate {
    /// One line per reason, for the person's question and for refusals: the effects first
    /// (most serious first), then the row's argument rules.
    pub fn reasons(&self) -> Vec<String> {
        let mut reasons = self.planned.reason_lines();
        reasons.extend(
            self.fired
                .iter()
                .map(|rule| format!("{}: {}", rule.condition(), rule.why)),
        );
        reasons
    }

    /// The gate decision as a short machine-readable word for results and the audit trail.
    pub fn kind(&self) -> &'static str {
        if !self.planned.effects.is_read() {
            "effects"
        } else if self.always {
            "always"
        } else {
            "arguments"
        }
    }

    /// The effects the call may have once approved: exactly what was planned.
    pub fn clearance(&self) -> EffectSet {
        self.planned.effects
    }
}

/// Evaluates the gate for validated arguments; `None` when the call is a plain read that no
/// row rule gates.
pub fn evaluate(spec: &'static ToolSpec, args: &ValidArgs) -> Option<Gate> {
    evaluate_with(spec, args, Classified::read())
}

/// [`evaluate`], with what the server learned before the gate (`dispatch::precheck`: the
/// cluster's own schema on a generic call) added to the plan.
pub fn evaluate_with(
    spec: &'static ToolSpec,
    args: &ValidArgs,
    learned: Classified,
) -> Option<Gate> {
    // A tool none of whose possible requests does more than read (the classifier's static
    // answer, `catalog::effects`) needs no plan: most calls are such reads, and the REST
    // client and SSH entry still classify what is actually sent.
    if !spec.can_be_gated() && learned.effects.is_read() {
        return None;
    }
    let fired: Vec<&'static ArgRule> = spec
        .gated_when
        .iter()
        .filter(|rule| {
            let values = wire_values(args, rule.param);
            rule.fires(&values.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    let mut planned = plan(spec, args);
    let learned_nothing = learned.effects.is_read();
    planned.merge(learned);
    let routine = (!spec.confirm && fired.is_empty() && learned_nothing)
        .then(|| routine_of(spec, args, &planned))
        .flatten();
    (spec.confirm || !fired.is_empty() || effects::needs_person(planned.effects)).then_some(Gate {
        always: spec.confirm,
        fired,
        planned,
        routine,
    })
}

/// The routine kind of a REST row's one request (see `effects::routine`); other backends'
/// calls are never routine.
fn routine_of(spec: &'static ToolSpec, args: &ValidArgs, planned: &Classified) -> Option<Routine> {
    let Backend::Rest { method, path } = spec.backend else {
        return None;
    };
    let request = crate::backends::build_request(spec, method, path, args, &[]);
    effects::routine::routine(
        request.method.as_str(),
        &request.path,
        &request.params,
        planned,
    )
}

/// Refuses a call the tier in force does not allow at all: a tool above it (the caller's
/// credentials may narrow the server's tier, see `identity::Caller::tier_within`) or a
/// sensitive read below `full`. Nothing is asked and nothing is sent.
pub fn tier_refusal(tier: Tier, spec: &ToolSpec, gate: Option<&Gate>) -> Option<ToolFailure> {
    if spec.tier > tier {
        return Some(
            ToolFailure::new(
                codes::EFFECT_NOT_APPROVED,
                format!(
                    "{} needs access tier {}; this caller's credentials allow {}. Nothing was sent to Proxmox.",
                    spec.name,
                    spec.tier.as_str(),
                    tier.as_str()
                ),
            )
            .with_hint("Ask for a token with a higher scope, or use a tool of your tier."),
        );
    }
    let planned = &gate?.planned;
    if tier == Tier::Full || !effects::needs_full_tier(planned.effects) {
        return None;
    }
    let why: Vec<String> = planned
        .reasons
        .iter()
        .filter(|r| r.effect == Effect::SensitiveRead)
        .map(|r| r.because.clone())
        .collect();
    Some(
        ToolFailure::new(
            codes::EFFECT_NOT_APPROVED,
            format!(
                "{} would read data Proxmox guards beyond an auditor's view ({}); that needs PVE_ACCESS_TIER=full and a person's approval. Nothing was sent to Proxmox.",
                spec.name,
                why.join("; ")
            ),
        )
        .with_hint("Use the named tool for this data at tier full, or ask the operator to raise PVE_ACCESS_TIER."),
    )
}

/// Refuses a call whose planned effects go beyond a plain read while changes are frozen
/// (the freeze file exists, looked at now): before a person is asked or a dry run reports it
/// as sendable. Plain reads go on. The REST client and SSH entry check the same switch for
/// each request, so a freeze that lands after this check still stops the call's requests.
pub fn frozen_refusal(
    spec: &ToolSpec,
    gate: Option<&Gate>,
    freeze: Option<&effects::FreezeSwitch>,
) -> Option<ToolFailure> {
    if gate?.planned.effects.is_read() {
        return None;
    }
    let frozen = freeze?.check().err()?;
    Some(crate::envelope::frozen(spec.name, &frozen))
}

/// What the call's requests will do (see the module docs).
pub fn plan(spec: &'static ToolSpec, args: &ValidArgs) -> Classified {
    match spec.backend {
        Backend::Rest { method, path } => {
            let request = crate::backends::build_request(spec, method, path, args, &[]);
            effects::classify_rest(request.method.as_str(), &request.path, &request.params)
        }
        Backend::PerNodeList { .. } => Classified::read(),
        Backend::Pbs { method, path } => {
            let request = crate::backends::build_request(spec, method, path, args, &[]);
            effects::classify_pbs(request.method.as_str(), &request.path, &request.params)
        }
        Backend::Ssh(op) => effects::classify_ssh(op.effect_kind(), op.describe()),
        Backend::Composite(op) => plan_composite(spec, op, args),
    }
}

fn plan_composite(spec: &'static ToolSpec, op: CompositeOp, args: &ValidArgs) -> Classified {
    match op {
        CompositeOp::ApiCall => plan_api_call(spec, args),
        CompositeOp::DownloadToStorage => {
            let path = "/nodes/{node}/storage/{storage}/download-url";
            let request = crate::backends::build_request(spec, HttpMethod::Post, path, args, &[]);
            effects::classify_rest("POST", &request.path, &request.params)
        }
        CompositeOp::QemuGuestExec => {
            let start = crate::backends::build_request(
                spec,
                HttpMethod::Post,
                "/nodes/{node}/qemu/{vmid}/agent/exec",
                args,
                &[],
            );
            let mut planned = effects::classify_rest("POST", &start.path, &[]);
            let status = start.path.replace("/agent/exec", "/agent/exec-status");
            planned.merge(effects::classify_rest("GET", &status, &[]));
            planned
        }
        CompositeOp::QemuAgentDiagnose
        | CompositeOp::QemuBootDiagnose
        | CompositeOp::InventoryOverview
        | CompositeOp::BackupHealth
        | CompositeOp::ClustersOverview
        | CompositeOp::Capabilities
        | CompositeOp::ListChanges
        | CompositeOp::ListLeases
        | CompositeOp::WaitTask => Classified::read(),
        // Planned and checked before the gate (`composite::precheck`): the learned effects.
        CompositeOp::UndoChange => Classified::read(),
        // A plan is never gated as one call: each step is (`pipeline::plan`).
        CompositeOp::ProvisionQemu | CompositeOp::ApplyPlan => Classified::read(),
    }
}

/// The generic call's one request, from its arguments as the handler will send it.
fn plan_api_call(spec: &ToolSpec, args: &ValidArgs) -> Classified {
    use crate::composite::api_call_check::{encode_path, structural_params, structural_path};
    let method = if spec.effect.is_read() {
        "GET".to_owned()
    } else {
        args.str("method").unwrap_or("GET").to_ascii_uppercase()
    };
    let Ok(segments) = structural_path(args.str("path").unwrap_or_default()) else {
        // Refused by the handler before anything is sent.
        return Classified::read();
    };
    let items = match args.values.get("params") {
        Some(ArgValue::List(items)) => items.clone(),
        _ => Vec::new(),
    };
    let params = structural_params(&items).unwrap_or_default();
    effects::classify_rest(&method, &encode_path(&segments), &params)
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
    fn a_backup_prunes_only_when_asked_and_then_is_not_routine() {
        // The tool sends remove=0 unless the caller asks to prune: one guest is routine.
        let plain = gate("pve_run_backup", json!({"node": "pve01", "vmid": "101"})).expect("gated");
        assert!(
            !plain.planned.effects.contains(Effect::Destroy),
            "{plain:?}"
        );
        assert_eq!(plain.routine, Some(Routine::Backup));
        let prune = gate(
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "101", "remove": true}),
        )
        .expect("gated");
        assert!(prune.planned.effects.contains(Effect::Destroy), "{prune:?}");
        assert_eq!(prune.routine, None);
        let many = gate(
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "100,101,102", "remove": false}),
        )
        .expect("gated");
        assert!(many.planned.effects.contains(Effect::CrossGuest));
        let mail = gate(
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "101", "mailto": "x@exfil.example"}),
        )
        .expect("gated");
        assert!(mail.planned.effects.contains(Effect::Egress));
        assert_eq!(mail.routine, None);
        assert_eq!(many.routine, None);
    }

    /// The routine kinds through real rows; a `confirm` row or a fired rule never is.
    #[test]
    fn routine_is_derived_from_the_request_and_never_for_confirm_rows() {
        let start =
            gate("pve_start_qemu_vm", json!({"node": "pve01", "vmid": 101})).expect("gated");
        assert_eq!(start.routine, Some(Routine::PowerOn));
        let snap = gate(
            "pve_qemu_create_snapshot",
            json!({"node": "pve01", "vmid": 101, "snapname": "before"}),
        )
        .expect("gated");
        assert_eq!(snap.routine, Some(Routine::Snapshot));
        let clone = gate(
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web"}),
        )
        .expect("gated");
        assert_eq!(clone.routine, Some(Routine::TemplateClone));
        let full = gate(
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 9000, "newid": 150, "full": true}),
        )
        .expect("gated");
        assert_eq!(full.routine, None);
        let notes = gate(
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 101, "tags": "web"}),
        )
        .expect("gated");
        assert!(notes.always);
        assert_eq!(notes.routine, None, "a confirm row is never routine");
        let stop = gate("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101})).expect("gated");
        assert_eq!(stop.routine, None);
    }

    #[test]
    fn a_start_is_a_change_and_a_status_read_is_not_gated() {
        let start =
            gate("pve_start_qemu_vm", json!({"node": "pve01", "vmid": 101})).expect("gated");
        assert_eq!(start.kind(), "effects");
        assert!(start.clearance().contains(Effect::Change));
        assert_eq!(
            gate("pve_get_qemu_status", json!({"node": "pve01", "vmid": 101})),
            None
        );
    }

    #[test]
    fn generic_gets_are_classified_by_what_they_reach() {
        let tos = gate(
            "pve_api_call",
            json!({"path": "/cluster/acme/tos", "params": ["directory=https://x.attacker.example/"]}),
        )
        .expect("gated");
        assert!(tos.planned.effects.contains(Effect::Egress));
        let shadow = gate(
            "pve_api_call",
            json!({"path": "/nodes/pve01/qemu/101/agent/file-read", "params": ["file=/etc/shadow"]}),
        )
        .expect("gated");
        assert!(tier_refusal(Tier::ReadOnly, spec("pve_api_call"), Some(&shadow)).is_some());
        assert!(tier_refusal(Tier::Full, spec("pve_api_call"), Some(&shadow)).is_none());
        assert_eq!(gate("pve_api_call", json!({"path": "/version"})), None);
    }

    #[test]
    fn a_refused_sensitive_read_names_only_what_makes_it_sensitive() {
        let scan = gate(
            "pve_api_call",
            json!({"path": "/nodes/pve01/scan/nfs", "params": ["server=203.0.113.9"]}),
        )
        .expect("gated");
        assert!(scan.planned.effects.contains(Effect::Egress), "{scan:?}");
        let refused = tier_refusal(Tier::ReadExecute, spec("pve_api_call"), Some(&scan))
            .expect("a sensitive read below full");
        assert!(
            refused.message.contains("needs Datastore.Allocate"),
            "{}",
            refused.message
        );
        // The egress is the person's question at `full`, not a reason for the tier refusal.
        assert!(
            !refused.message.contains("connects to this host"),
            "{}",
            refused.message
        );
    }

    /// A row's own rules add to the effects and never remove: a `confirm` row is asked even
    /// when every request it sends is a plain read.
    #[test]
    fn a_confirm_row_gates_even_a_plain_read() {
        static ASKING_READ: ToolSpec = ToolSpec {
            name: "test_asking_read",
            confirm: true,
            backend: Backend::Rest {
                method: HttpMethod::Get,
                path: "/version",
            },
            ..ToolSpec::BASE
        };
        let args = schema::validate(&ASKING_READ, json!({}).as_object()).expect("valid");
        let gate = evaluate(&ASKING_READ, &args).expect("a confirm row is gated");
        assert!(gate.always && gate.fired.is_empty(), "{gate:?}");
        assert!(gate.planned.effects.is_read(), "{gate:?}");
        assert_eq!(gate.kind(), "always");
    }

    #[test]
    fn privileged_container_and_family_keys_gate_a_create() {
        let base = json!({"node": "pve01", "vmid": 200, "ostemplate": "local:vztmpl/debian-12.tar.zst", "unprivileged": true});
        let unprivileged = gate("pve_lxc_create", base.clone()).expect("a create is a change");
        assert!(!unprivileged.planned.effects.contains(Effect::Access));
        let mut without = base.clone();
        without.as_object_mut().map(|o| o.remove("unprivileged"));
        let privileged = gate("pve_lxc_create", without).expect("gated");
        assert!(privileged.planned.effects.contains(Effect::Access));
        let mut mount = base;
        mount["mp0"] = json!("/srv/host,mp=/mnt/host");
        let mounted = gate("pve_lxc_create", mount).expect("gated");
        assert!(mounted.planned.effects.contains(Effect::Access));
        // The row's argument rules fire on what was given, an indexed key by its family.
        let fired = |g: &Gate| g.fired.iter().map(|rule| rule.param).collect::<Vec<_>>();
        assert_eq!(fired(&unprivileged), Vec::<&str>::new());
        assert_eq!(fired(&privileged), ["unprivileged"]);
        assert_eq!(fired(&mounted), ["mp"]);
        let mut keyed = json!({"node": "pve01", "vmid": 201, "ostemplate": "local:vztmpl/debian-12.tar.zst", "unprivileged": true});
        keyed["password"] = json!("hunter2-root");
        keyed["start"] = json!(true);
        let keyed = gate("pve_lxc_create", keyed).expect("gated");
        assert_eq!(fired(&keyed), ["password", "start"]);
        assert!(
            keyed
                .reasons()
                .contains(&"password: sets the root password".to_owned()),
            "{:?}",
            keyed.reasons()
        );
    }

    #[test]
    fn confirm_tools_are_always_gated() {
        let gate = gate("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101})).expect("gated");
        assert!(gate.always);
        assert!(gate.planned.effects.contains(Effect::Destroy));
    }
}
