//! What a tool's requests *can* do, derived from its row by the effects classifier: the
//! effects every call has (its endpoint's own), and the arguments that can add more.
//!
//! This is the static face of the gate: the `confirm` argument in a tool's schema, its
//! `_meta["anthropic/requiresUserInteraction"]`, `tools --json`, docs/TOOLS.md and the threat
//! model's sink table all read it. The run-time gate (`gate::plan`) classifies the actual
//! request; this module answers for every possible one. Invariant: computed once per tool,
//! from the row and `effects` only — never a hand-written list of tools.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::types::{Backend, CompositeOp, ToolSpec};
use crate::effects::{self, Classified, Effect, EffectSet, derive::ParamKind};

/// The static classification of one tool.
#[derive(Debug, Clone, Default)]
pub struct ToolEffects {
    /// Effects every call has (empty: a call can be a plain read).
    pub always: EffectSet,
    /// Effects some calls have, by the arguments named in `because`.
    pub possible: Classified,
}

impl ToolEffects {
    /// Whether some call of the tool needs a person.
    pub fn can_need_person(&self) -> bool {
        !self.possible.effects.is_read()
    }

    /// Whether every call of the tool needs a person.
    pub fn always_needs_person(&self) -> bool {
        !self.always.is_read()
    }
}

/// What a listing needs of a tool's classification: the effect sets, without the reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EffectSummary {
    /// Effects every call has.
    pub always: EffectSet,
    /// Effects some call can have.
    pub possible: EffectSet,
}

/// The generated summary of every catalog row: `NAME  ALWAYS  POSSIBLE` (tab separated,
/// effect names comma separated, `-` for none), sorted by name. [`render_summary`] writes it
/// and `tests/effects_schema.rs` fails when it differs from the classifier's answer
/// (`UPDATE_EFFECTS=1` rewrites it), so a listing never classifies 180 rows at start.
const SUMMARY_TSV: &str = include_str!("effects.tsv");

/// The effect sets of `spec`, from the generated table; a row the table lacks (a build whose
/// table is stale, which the test refuses) is classified instead.
pub fn summary(spec: &ToolSpec) -> EffectSummary {
    static TABLE: OnceLock<Vec<(&'static str, EffectSummary)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| SUMMARY_TSV.lines().filter_map(parse_summary).collect());
    match table.binary_search_by(|(name, _)| (*name).cmp(spec.name)) {
        Ok(i) => table[i].1,
        Err(_) => {
            let full = of(spec);
            EffectSummary {
                always: full.always,
                possible: full.possible.effects,
            }
        }
    }
}

fn parse_summary(line: &'static str) -> Option<(&'static str, EffectSummary)> {
    let mut fields = line.split('\t');
    let name = fields.next()?;
    let set = |field: &str| -> EffectSet {
        field
            .split(',')
            .filter_map(|n| Effect::ALL.into_iter().find(|e| e.as_str() == n))
            .collect()
    };
    let always = set(fields.next()?);
    let possible = set(fields.next()?);
    Some((name, EffectSummary { always, possible }))
}

/// The content of `effects.tsv`, classified now from every catalog row.
pub fn render_summary() -> String {
    let names = |set: EffectSet| {
        if set.is_read() {
            "-".to_owned()
        } else {
            set.names().join(",")
        }
    };
    let mut rows: Vec<String> = super::all()
        .map(|spec| {
            let e = of(spec);
            format!(
                "{}\t{}\t{}",
                spec.name,
                names(e.always),
                names(e.possible.effects)
            )
        })
        .collect();
    rows.sort();
    let mut out = rows.join("\n");
    out.push('\n');
    out
}

/// The static classification of `spec`, with the reasons (cached per tool name; the first
/// use classifies every row — docs, `tools --json` and the threat model, not the listing).
pub fn of(spec: &ToolSpec) -> &'static ToolEffects {
    static CACHE: OnceLock<HashMap<&'static str, ToolEffects>> = OnceLock::new();
    static NONE: OnceLock<ToolEffects> = OnceLock::new();
    CACHE
        .get_or_init(|| super::all().map(|s| (s.name, classify(s))).collect())
        .get(spec.name)
        .unwrap_or_else(|| NONE.get_or_init(ToolEffects::default))
}

fn classify(spec: &ToolSpec) -> ToolEffects {
    let mut out = match spec.backend {
        Backend::Rest { method, path } => rest(spec, method.as_str(), path),
        Backend::PerNodeList { .. } => ToolEffects::default(),
        Backend::Pbs { method, path } => pbs_row(spec, method.as_str(), path),
        Backend::Ssh(op) => {
            let c = effects::classify_ssh(op.effect_kind(), op.describe());
            ToolEffects {
                always: c.effects,
                possible: c,
            }
        }
        Backend::Composite(op) => composite(spec, op),
    };
    if spec.confirm {
        out.always.insert(Effect::Change);
        out.possible
            .add(Effect::Change, "the tool asks for approval on every call");
    }
    for rule in spec.gated_when {
        out.possible.add(
            Effect::Change,
            format!("{}: {}", rule.condition(), rule.why),
        );
    }
    out
}

/// A PBS row: its endpoint's effects with the row's fixed arguments (a preview's `dry-run`).
fn pbs_row(spec: &ToolSpec, method: &str, path: &str) -> ToolEffects {
    let fixed: Vec<(String, String)> = spec
        .params
        .iter()
        .filter(|p| p.fixed)
        .filter_map(|p| Some((p.api_name().to_owned(), p.default?.to_owned())))
        .collect();
    let c = effects::classify_pbs(method, path, &fixed);
    ToolEffects {
        always: c.effects,
        possible: c,
    }
}

/// A REST row: the endpoint's own effects on every call, plus what its parameters can add.
/// The schema endpoints a REST row's path template reaches: placeholders whose parameter
/// is limited to a few values (`guest_type` = `qemu`|`lxc`) are expanded to those values.
pub fn reached_endpoints(
    spec: &ToolSpec,
    method: &str,
    path: &str,
) -> Vec<&'static effects::Endpoint> {
    let mut templates = vec![path.to_owned()];
    for param in spec.params.iter().filter(|p| !p.one_of.is_empty()) {
        let placeholder = format!("{{{}}}", param.name);
        if !path.contains(&placeholder) {
            continue;
        }
        templates = templates
            .iter()
            .flat_map(|t| {
                param
                    .one_of
                    .iter()
                    .map(|v| t.replace(&placeholder, v))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    let mut reached: Vec<&'static effects::Endpoint> = templates
        .iter()
        .flat_map(|t| effects::endpoints_for_template(method, t))
        .collect();
    reached.sort_by(|a, b| a.path.cmp(&b.path));
    reached.dedup_by(|a, b| a.path == b.path);
    reached
}

fn rest(spec: &ToolSpec, method: &str, path: &str) -> ToolEffects {
    let reached = reached_endpoints(spec, method, path);
    let mut base = Classified::read();
    for endpoint in &reached {
        base.merge(effects::classify_rest(method, &endpoint.path, &[]));
    }
    if reached.is_empty() {
        base = effects::classify_rest(method, path, &[]);
    }
    let mut possible = base.clone();
    for endpoint in reached {
        for param in spec.params {
            let name = if param.index.is_some() {
                format!("{}0", param.name)
            } else {
                param.api_name().to_owned()
            };
            match endpoint.param_kind(&name) {
                Some(ParamKind::Url | ParamKind::Server | ParamKind::Mail) => {
                    possible.add(
                        Effect::Egress,
                        format!("{}: an address the node contacts", param.name),
                    );
                }
                Some(ParamKind::Vmids) => possible.add(
                    Effect::CrossGuest,
                    format!("{}: several guests at once", param.name),
                ),
                Some(ParamKind::Volume) => possible.add(
                    Effect::CrossGuest,
                    format!("{}: another guest's volume, or import-from", param.name),
                ),
                None => {}
            }
        }
    }
    ToolEffects {
        always: base.effects,
        possible,
    }
}

fn composite(spec: &ToolSpec, op: CompositeOp) -> ToolEffects {
    match op {
        CompositeOp::ApiCall if spec.effect.is_read() => {
            let mut possible = Classified::read();
            possible.add(
                Effect::SensitiveRead,
                "path: an endpoint that needs more than an auditor's privilege",
            );
            possible.add(Effect::Egress, "params: a URL or server the node contacts");
            possible.add(
                Effect::Unplaced,
                "path: an endpoint this server does not know",
            );
            ToolEffects {
                always: EffectSet::READ,
                possible,
            }
        }
        CompositeOp::ApiCall => {
            let mut possible = Classified::read();
            possible.add(Effect::Change, "method: POST, PUT or DELETE");
            for effect in Effect::ALL {
                if effect != Effect::Change {
                    possible.add(effect, "path and params: whatever the endpoint does");
                }
            }
            ToolEffects {
                always: EffectSet::of(Effect::Change),
                possible,
            }
        }
        CompositeOp::DownloadToStorage => {
            let mut c =
                effects::classify_rest("POST", "/nodes/{node}/storage/{storage}/download-url", &[]);
            c.add(Effect::Egress, "url: the node downloads from it");
            ToolEffects {
                always: c.effects,
                possible: c,
            }
        }
        CompositeOp::QemuGuestExec => {
            let mut c = effects::classify_rest("POST", "/nodes/{node}/qemu/{vmid}/agent/exec", &[]);
            c.merge(effects::classify_rest(
                "GET",
                "/nodes/{node}/qemu/{vmid}/agent/exec-status",
                &[],
            ));
            ToolEffects {
                always: c.effects,
                possible: c,
            }
        }
        CompositeOp::ApplyPlan => {
            // Whatever its steps do; each step is gated as its own row.
            let mut possible = Classified::read();
            for effect in Effect::ALL {
                possible.add(effect, "a step of the plan: whatever its row does");
            }
            ToolEffects {
                always: EffectSet::of(Effect::Change),
                possible,
            }
        }
        CompositeOp::UndoChange => {
            // A revert sends the opposite of what was recorded: old config values (any
            // key), a stop, a snapshot's or a clone's deletion, pool membership.
            let mut possible = Classified::read();
            possible.add(Effect::Change, "a revert changes the target back");
            for effect in Effect::ALL {
                if effect != Effect::Change {
                    possible.add(effect, "the recorded change's revert: whatever it does");
                }
            }
            ToolEffects {
                always: EffectSet::of(Effect::Change),
                possible,
            }
        }
        CompositeOp::ProvisionQemu => {
            // Whatever its steps (and a rollback) send; each step is gated as its own row.
            let mut possible = Classified::read();
            for (method, path) in op.reaches() {
                possible.merge(effects::classify_rest(method.as_str(), path, &[]));
            }
            ToolEffects {
                always: EffectSet::of(Effect::Change),
                possible,
            }
        }
        CompositeOp::QemuAgentDiagnose
        | CompositeOp::QemuBootDiagnose
        | CompositeOp::InventoryOverview
        | CompositeOp::BackupHealth
        | CompositeOp::ClustersOverview
        | CompositeOp::Capabilities
        | CompositeOp::ListChanges
        | CompositeOp::ListLeases
        | CompositeOp::WaitTask => ToolEffects::default(),
    }
}

/// The approval questions a row answers from its effects; here beside the classifier so
/// `types` (the row) needs nothing from this file.
impl ToolSpec {
    /// Whether any call of this tool can need approval: some request it can send does more
    /// than read (from the effects classifier), or a row rule gates it.
    pub fn can_be_gated(&self) -> bool {
        self.confirm || !self.gated_when.is_empty() || !summary(self).possible.is_read()
    }

    /// MCP `openWorldHint`: the row says the cluster reaches outside itself (mail, remote
    /// storage), the classifier finds egress, or the tool runs a program the caller chooses
    /// (a shell command, an argv in a guest), which reaches whatever that program can.
    pub fn opens_world(&self) -> bool {
        self.open_world
            || self.backend.runs_callers_program()
            || summary(self).possible.contains(Effect::Egress)
    }

    /// Whether every call of this tool needs a person (announced to clients as
    /// `_meta["anthropic/requiresUserInteraction"]`). A tool whose calls can be routine
    /// changes (`effects::routine`: start, resume, snapshot, a template's linked clone, one
    /// unpruned backup) is not: the server asks for the calls that are not, itself.
    pub fn always_gated(&self) -> bool {
        self.confirm || (!summary(self).always.is_read() && !self.can_be_routine())
    }

    /// Whether some call of this tool can be a routine change that runs without a person:
    /// a REST row without `confirm` whose endpoint is one of the routine routes.
    pub fn can_be_routine(&self) -> bool {
        match self.backend {
            Backend::Rest { method, path } => {
                !self.confirm && effects::routine::kind_of_route(method.as_str(), path).is_some()
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Tier;

    #[test]
    fn every_row_is_placed_and_agrees_with_its_tier() {
        for spec in crate::catalog::all() {
            let e = of(spec);
            assert!(
                !e.always.contains(Effect::Unplaced),
                "{}: its endpoint is not in the schema table",
                spec.name
            );
            if !spec.effect.is_read() {
                assert!(
                    e.always_needs_person(),
                    "{}: a write row whose requests read",
                    spec.name
                );
            }
            if e.always.contains(Effect::SensitiveRead) {
                assert_eq!(
                    spec.tier,
                    Tier::Full,
                    "{}: a sensitive read below full",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn the_generic_read_can_need_a_person_but_a_plain_list_cannot() {
        let api = crate::catalog::find("pve_api_call").expect("row");
        assert!(api.can_be_gated());
        assert!(!api.always_gated());
        let nodes = crate::catalog::find("pve_list_nodes").expect("row");
        assert!(!nodes.can_be_gated());
        // A start is a change on every call, but a routine one: the server asks only when the
        // target's facts say so, so clients are not told every call needs a person.
        let start = crate::catalog::find("pve_start_qemu_vm").expect("row");
        assert!(start.can_be_gated() && start.can_be_routine());
        assert!(!start.always_gated());
        let stop = crate::catalog::find("pve_stop_qemu_vm").expect("row");
        assert!(stop.always_gated() && !stop.can_be_routine());
        let update = crate::catalog::find("pve_qemu_update_config").expect("row");
        assert!(
            update.always_gated() && !update.can_be_routine(),
            "a confirm row"
        );
    }
}
