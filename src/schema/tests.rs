//! Unit tests of schema generation and argument validation.
use super::*;
use crate::catalog;

fn spec(name: &str) -> &'static ToolSpec {
    catalog::find(name).unwrap()
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn schema_is_plain_object_with_described_properties_and_no_value_rules() {
    for spec in catalog::all() {
        let schema = input_schema(spec);
        assert_eq!(schema["type"], "object");
        for key in ["anyOf", "oneOf", "allOf"] {
            assert!(!schema.contains_key(key), "{}", spec.name);
        }
        let families = schema.get("patternProperties").and_then(Value::as_object);
        let props = schema["properties"].as_object().unwrap().iter();
        for (name, prop) in props.chain(families.into_iter().flatten()) {
            // A row's `capped` range lists its maximum (the cluster log's `max`), nothing else.
            let capped = spec.param(name).is_some_and(|p| p.lists_maximum);
            for rule in ["pattern", "maxLength", "minimum", "maximum"] {
                if rule == "maximum" && capped {
                    continue;
                }
                assert!(
                    prop.get(rule).is_none(),
                    "{}.{name}: value rules stay on the server",
                    spec.name
                );
            }
        }
        for (name, prop) in schema["properties"].as_object().unwrap() {
            // The flags whose names say it all are explained once, in the instructions.
            if name == DRY_RUN || name == WAIT || name == CONFIRM {
                assert_eq!(prop, &json!({"type": "boolean"}), "{}.{name}", spec.name);
                continue;
            }
            let desc = prop["description"].as_str().unwrap_or("");
            assert!(desc.len() >= 10, "{}.{name} lacks a description", spec.name);
        }
    }
}

#[test]
fn confirm_property_only_on_tools_whose_calls_can_need_a_person() {
    let stop = input_schema(spec("pve_stop_qemu_vm"));
    assert_eq!(stop["properties"]["confirm"]["type"], "boolean");
    let start = input_schema(spec("pve_start_qemu_vm"));
    assert_eq!(start["properties"]["confirm"]["type"], "boolean");
    let status = input_schema(spec("pve_get_qemu_status"));
    assert!(status["properties"].get("confirm").is_none());
}

#[test]
fn accepts_valid_arguments() {
    let ok = validate(
        spec("pve_stop_qemu_vm"),
        Some(&args(
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )),
    )
    .unwrap();
    assert!(ok.confirmed);
    assert_eq!(ok.values["vmid"], ArgValue::Int(101));
}

#[test]
fn rejects_each_kind_of_bad_input() {
    let s = spec("pve_get_qemu_status");
    let cases = [
        (json!({"node": "pve01"}), "vmid", "missing"),
        (json!({"node": "pve01", "vmid": "101"}), "vmid", "integer"),
        (json!({"node": "pve01", "vmid": 5}), "vmid", "at least 100"),
        (json!({"node": "pve01", "vmid": 1.5}), "vmid", "integer"),
        (json!({"node": "../etc", "vmid": 101}), "node", "pattern"),
        (
            json!({"node": "pve01", "vmid": 101, "x": 1}),
            "x",
            "unknown",
        ),
    ];
    for (input, field, needle) in cases {
        let err = validate(s, Some(&args(input.clone()))).unwrap_err();
        let msg = err
            .errors
            .get(field)
            .unwrap_or_else(|| panic!("{input}: {err:?}"));
        assert!(msg.contains(needle), "{input}: {msg}");
    }
}

#[test]
fn enum_and_confirm_type_checked() {
    let err = validate(
        spec("pve_list_cluster_resources"),
        Some(&args(json!({"type": "vms"}))),
    )
    .unwrap_err();
    assert!(err.errors["type"].contains("one of"));
    let err = validate(
        spec("pve_stop_task"),
        Some(&args(
            json!({"node": "pve01", "upid": "x", "confirm": "yes"}),
        )),
    )
    .unwrap_err();
    assert!(err.errors.contains_key("confirm"));
    assert!(err.errors.contains_key("upid"));
}

#[test]
fn booleans_go_on_the_wire_as_perl_integers() {
    assert_eq!(ArgValue::Bool(true).to_wire(), "1");
    assert_eq!(ArgValue::Bool(false).to_wire(), "0");
}

#[test]
fn the_schema_with_rules_carries_what_validate_enforces() {
    let lean = input_schema(spec("pve_get_node_status"));
    let whole = input_schema_with_rules(spec("pve_get_node_status"));
    assert!(lean["properties"]["node"].get("pattern").is_none());
    let pattern = whole["properties"]["node"]["pattern"].as_str().unwrap();
    assert_eq!(Some(pattern), spec("pve_get_node_status").params[0].pattern);
    let refused = validate(
        spec("pve_get_node_status"),
        Some(&args(json!({"node": "../etc"}))),
    )
    .unwrap_err();
    assert!(
        refused.errors["node"].contains(pattern),
        "{:?}",
        refused.errors
    );
}
