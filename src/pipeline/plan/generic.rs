//! The steps of `pve_apply_plan`, as the model proposed them: each `{"tool", "arguments"}`,
//! with a string `"$N.name"` standing for step N's argument `name`.
//!
//! Invariants: a step names a tool of the catalog that is not itself a plan; its arguments
//! carry none of the plan's own controls (`confirm`, `dry_run`, `cluster`: the plan's approval,
//! preview and cluster are the plan's); a reference names an earlier step and an argument it
//! has, else the plan is refused before anything is read. Step results are not referenced:
//! every step is judged before the first one runs.

use serde_json::{Map, Value, json};

use super::Step;
use super::run::Done;
use crate::envelope::{ToolFailure, codes};
use crate::schema::{ArgValue, ValidArgs};

/// Keys of a step object.
const STEP_KEYS: [&str; 2] = ["tool", "arguments"];
/// Arguments that belong to the plan, not to a step.
const PLAN_CONTROLS: [&str; 3] = ["confirm", "dry_run", "cluster"];

/// The steps of the `steps` argument, references resolved.
pub(super) fn steps(args: &ValidArgs) -> Result<Vec<Step>, ToolFailure> {
    let Some(ArgValue::Objects(items)) = args.values.get("steps") else {
        return Err(refused("`steps` is required"));
    };
    let mut steps: Vec<Step> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |why: String| refused(&format!("step {}: {why}", i + 1));
        if let Some(key) = item.keys().find(|k| !STEP_KEYS.contains(&k.as_str())) {
            return Err(at(format!(
                "unknown key {}; a step is {{\"tool\", \"arguments\"}}",
                crate::preview::quoted(key)
            )));
        }
        let name = item.get("tool").and_then(Value::as_str).unwrap_or_default();
        let Some(spec) = crate::catalog::find(name) else {
            return Err(at(format!(
                "{} is not a tool of this server",
                crate::preview::quoted(name)
            )));
        };
        if super::is_plan(spec) {
            return Err(at(format!(
                "{} is a plan; a plan cannot hold a plan",
                spec.name
            )));
        }
        let arguments = match item.get("arguments") {
            None => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => return Err(at("`arguments` must be an object".to_owned())),
        };
        if let Some(control) = PLAN_CONTROLS.iter().find(|c| arguments.contains_key(**c)) {
            return Err(at(format!(
                "`{control}` belongs to the plan, not to a step; set it on pve_apply_plan"
            )));
        }
        let mut resolved = Map::new();
        for (key, value) in arguments {
            let value = resolve(&value, &steps).map_err(&at)?;
            resolved.insert(key, value);
        }
        steps.push(Step {
            tool: spec.name,
            arguments: resolved,
        });
    }
    Ok(steps)
}

/// A value, or (a string `"$N.name"`) step N's argument `name`.
fn resolve(value: &Value, earlier: &[Step]) -> Result<Value, String> {
    let Some(reference) = value.as_str().and_then(|s| s.strip_prefix('$')) else {
        return Ok(value.clone());
    };
    let Some((index, name)) = reference.split_once('.') else {
        return Ok(value.clone());
    };
    let Ok(index) = index.parse::<usize>() else {
        return Ok(value.clone());
    };
    let step = index
        .checked_sub(1)
        .and_then(|i| earlier.get(i))
        .ok_or_else(|| format!("\"${index}.{name}\" names no earlier step"))?;
    step.arguments.get(name).cloned().ok_or_else(|| {
        format!(
            "\"${index}.{name}\": step {index} ({}) has no argument {}",
            step.tool,
            crate::preview::quoted(name)
        )
    })
}

/// The plan's answer: its id, each step's tool, undo record and data, and the one call that
/// reverts it.
pub(super) fn report(done: &[Done], id: &str) -> Value {
    let steps: Vec<Value> = done
        .iter()
        .enumerate()
        .map(|(i, d)| json!({"step": i + 1, "tool": d.tool, "change": d.undo, "data": d.answer["data"]}))
        .collect();
    json!({
        "plan": id,
        "steps": steps,
        "revert": super::run::revert_call(done),
    })
}

/// A plan refused for its shape: nothing was read or sent.
fn refused(why: &str) -> ToolFailure {
    ToolFailure::new(
        codes::TOOL_INPUT_REJECTED,
        format!("The plan was refused before anything was sent: {why}."),
    )
}
