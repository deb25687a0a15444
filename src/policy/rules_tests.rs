//! The rules table: each action, each match kind, the order (deny beats ask beats allow), the
//! all-effects rule of `allow`, the fail-closed guest facts, and every parse error.

use serde_json::json;

use super::*;

fn policy(rules: Value) -> PolicyRules {
    PolicyRules::parse(&json!({ "rules": rules }), "test").expect("valid policy")
}

fn parse_err(value: Value) -> String {
    PolicyRules::parse(&value, "test")
        .expect_err("invalid policy")
        .to_string()
}

fn effects(names: &[Effect]) -> EffectSet {
    names.iter().copied().collect()
}

/// A start of guest 101 on pve01, tagged prod and web, in pool emu-pool.
fn start() -> Subject {
    Subject {
        tool: "pve_start_qemu_vm".into(),
        effects: effects(&[Effect::Change]),
        class: Class::Routine,
        cluster: None,
        node: Some("pve01".into()),
        vmid: Some(101),
        pool_argument: None,
        guest: Guest::Known {
            pool: Some("emu-pool".into()),
            tags: vec!["prod".into(), "web".into()],
        },
    }
}

fn destroy() -> Subject {
    Subject {
        tool: "pve_delete_qemu_vm".into(),
        effects: effects(&[Effect::Change, Effect::Destroy]),
        class: Class::Consequential,
        ..start()
    }
}

fn decided(p: &PolicyRules, s: &Subject) -> Option<Action> {
    p.decide(s).action
}

#[test]
fn no_rule_leaves_the_built_in_default() {
    let d = PolicyRules::default().decide(&start());
    assert_eq!(d.action, None);
    assert_eq!(d.rule, None);
    assert!(d.why.starts_with("built-in default"), "{}", d.why);
    assert_eq!(d.approval(), None);
}

#[test]
fn each_action_decides() {
    for (action, expected) in [
        ("allow", Action::Allow),
        ("ask", Action::Ask),
        ("deny", Action::Deny),
    ] {
        let p = policy(json!([{ "action": action, "tool": "pve_start_qemu_vm" }]));
        let d = p.decide(&start());
        assert_eq!(d.action, Some(expected), "{action}");
        assert_eq!(d.rule.as_ref().map(|r| r.id.as_str()), Some("rule#1"));
        assert_eq!(
            d.approval().is_some(),
            expected == Action::Allow,
            "only an allow is an approval"
        );
    }
    let named = policy(json!([{ "name": "lab-starts", "action": "allow" }]));
    assert_eq!(named.decide(&start()).approval(), Some("policy:lab-starts"));
}

#[test]
fn deny_beats_ask_beats_allow_whatever_the_order() {
    let p = policy(json!([
        { "action": "allow", "tool": "pve_start_*" },
        { "action": "ask", "node": "pve01" },
        { "action": "deny", "tag": "prod" },
    ]));
    let d = p.decide(&start());
    assert_eq!(d.action, Some(Action::Deny));
    assert_eq!(d.rule.map(|r| r.id), Some("rule#3".to_owned()));
    assert_eq!(d.matched.len(), 3);
    assert!(d.why.contains("deny beats ask beats allow"), "{}", d.why);
    let p = policy(json!([
        { "action": "allow", "tool": "pve_start_*" },
        { "action": "ask", "node": "pve01" },
    ]));
    assert_eq!(decided(&p, &start()), Some(Action::Ask));
    // Within one action, the first rule in file order is named.
    let p = policy(json!([
        { "name": "a", "action": "ask", "node": "pve01" },
        { "name": "b", "action": "ask", "vmid": "101" },
    ]));
    assert_eq!(p.decide(&start()).rule.map(|r| r.id), Some("a".to_owned()));
}

#[test]
fn allow_needs_every_effect_listed_deny_any() {
    let allow_change = policy(json!([{ "action": "allow", "effect": "change" }]));
    assert_eq!(decided(&allow_change, &start()), Some(Action::Allow));
    assert_eq!(
        decided(&allow_change, &destroy()),
        None,
        "an allow for change never lets a destroy through"
    );
    let allow_both = policy(json!([{ "action": "allow", "effect": ["change", "destroy"] }]));
    assert_eq!(decided(&allow_both, &destroy()), Some(Action::Allow));
    let deny_destroy = policy(json!([{ "action": "deny", "effect": ["destroy"] }]));
    assert_eq!(decided(&deny_destroy, &destroy()), Some(Action::Deny));
    assert_eq!(decided(&deny_destroy, &start()), None);
    let ask_destroy = policy(json!([{ "action": "ask", "effect": ["exec", "destroy"] }]));
    assert_eq!(decided(&ask_destroy, &destroy()), Some(Action::Ask));
}

#[test]
fn each_match_kind_holds_or_not() {
    let cases = [
        (
            json!({ "class": "routine" }),
            json!({ "class": "consequential" }),
        ),
        (
            json!({ "tool": "pve_start_qemu_vm" }),
            json!({ "tool": "pve_stop_qemu_vm" }),
        ),
        (
            json!({ "tool": "pve_start_*" }),
            json!({ "tool": "pve_stop_*" }),
        ),
        (
            json!({ "node": "PVE01" }),
            json!({ "node": ["pve02", "pve03"] }),
        ),
        (json!({ "pool": "emu-pool" }), json!({ "pool": "lab" })),
        (json!({ "tag": ["db", "web"] }), json!({ "tag": "db" })),
        (
            json!({ "vmid": "100-199" }),
            json!({ "vmid": ["200-299", 9000] }),
        ),
        (json!({ "vmid": 101 }), json!({ "vmid": "102" })),
        (json!({ "effect": ["change"] }), json!({ "effect": "exec" })),
    ];
    for (holds, fails) in cases {
        for (keys, expected) in [(holds, Some(Action::Ask)), (fails, None)] {
            let mut rule = keys.as_object().cloned().expect("object");
            rule.insert("action".into(), json!("ask"));
            let p = policy(json!([rule]));
            assert_eq!(decided(&p, &start()), expected, "{keys}");
        }
    }
    // A cluster rule matches only a call routed to that cluster.
    let p = policy(json!([{ "action": "deny", "cluster": "lab" }]));
    assert_eq!(decided(&p, &start()), None);
    let in_lab = Subject {
        cluster: Some("lab".into()),
        ..start()
    };
    assert_eq!(decided(&p, &in_lab), Some(Action::Deny));
    // Keys without a value in the call (no node, no vmid) do not match.
    let bare = Subject {
        node: None,
        vmid: None,
        guest: Guest::None,
        ..start()
    };
    for rule in [
        json!({ "action": "deny", "node": "pve01" }),
        json!({ "action": "deny", "vmid": "1-999999" }),
        json!({ "action": "deny", "tag": "prod" }),
        json!({ "action": "deny", "pool": "emu-pool" }),
    ] {
        assert_eq!(decided(&policy(json!([rule])), &bare), None, "{rule}");
    }
    // The `pool` argument of a call counts as its guest's pool.
    let into_lab = Subject {
        pool_argument: Some("lab".into()),
        ..bare
    };
    let p = policy(json!([{ "action": "deny", "pool": "lab" }]));
    assert_eq!(decided(&p, &into_lab), Some(Action::Deny));
    // Every key given must hold.
    let p = policy(json!([{ "action": "allow", "tool": "pve_start_*", "node": "pve02" }]));
    assert_eq!(decided(&p, &start()), None);
}

#[test]
fn unread_facts_never_satisfy_an_allow_and_always_a_tightening() {
    let unread = Subject {
        guest: Guest::Unknown("GET /cluster/resources failed".into()),
        ..start()
    };
    let allow = policy(json!([{ "action": "allow", "pool": "emu-pool" }]));
    assert_eq!(decided(&allow, &start()), Some(Action::Allow));
    assert_eq!(decided(&allow, &unread), None);
    for action in ["ask", "deny"] {
        let p = policy(json!([{ "action": action, "tag": "other" }]));
        assert!(decided(&p, &unread).is_some(), "{action}");
        assert_eq!(decided(&p, &start()), None, "{action}");
    }
    // A rule without pool or tag does not care.
    let p = policy(json!([{ "action": "allow", "tool": "pve_start_qemu_vm" }]));
    assert_eq!(decided(&p, &unread), Some(Action::Allow));
    assert!(policy(json!([{ "action": "allow", "tag": "x" }])).needs_guest_facts());
    assert!(!p.needs_guest_facts());
}

#[test]
fn rule_text_and_doctor_risks() {
    let p = policy(json!([
        { "action": "allow", "class": "routine", "pool": "lab" },
        { "action": "allow", "effect": ["change", "exec"], "node": "pve02" },
        { "action": "allow", "vmid": "100-199" },
        { "action": "deny", "effect": "exec" },
    ]));
    assert_eq!(p.rules[0].text, "allow class=routine pool=lab");
    assert_eq!(p.rules[1].text, "allow effect=change,exec node=pve02");
    let risks = p.unattended_risks();
    assert_eq!(risks.len(), 2, "{risks:?}");
    assert!(risks[0].starts_with("rule#2") && risks[0].ends_with("lets exec run without a person"));
    assert!(
        risks[1].contains("exec, egress, access, unplaced"),
        "{risks:?}"
    );
}

#[test]
fn parse_errors_are_clear_and_fail_closed() {
    let cases = [
        (json!([]), "must be an object"),
        (json!({ "rule": [] }), "unknown key"),
        (json!({ "rules": {} }), "must be a list"),
        (json!({ "rules": [7] }), "rules[0]: must be an object"),
        (
            json!({ "rules": [{ "tool": "pve_start_qemu_vm" }] }),
            "rules[0].action",
        ),
        (
            json!({ "rules": [{ "action": "permit" }] }),
            "\"permit\" is not one of",
        ),
        (
            json!({ "rules": [{ "action": "allow", "effects": "change" }] }),
            "rules[0].effects: unknown key",
        ),
        (
            json!({ "rules": [{ "action": "allow", "effect": "write" }] }),
            "is not an effect",
        ),
        (
            json!({ "rules": [{ "action": "allow", "effect": [] }] }),
            "an empty list",
        ),
        (
            json!({ "rules": [{ "action": "allow", "class": "safe" }] }),
            "routine, consequential",
        ),
        (
            json!({ "rules": [{ "action": "allow", "tool": "pve_nothing" }] }),
            "is not a tool",
        ),
        (
            json!({ "rules": [{ "action": "allow", "tool": "zz_*" }] }),
            "matches no tool",
        ),
        (
            json!({ "rules": [{ "action": "allow", "tool": "pve_*_vm" }] }),
            "may only end",
        ),
        (
            json!({ "rules": [{ "action": "allow", "vmid": "200-100" }] }),
            "not a VMID",
        ),
        (
            json!({ "rules": [{ "action": "allow", "vmid": "abc" }] }),
            "not a VMID",
        ),
        (
            json!({ "rules": [{ "action": "allow", "node": true }] }),
            "rules[0].node",
        ),
        (
            json!({ "rules": [{ "action": "allow", "name": "a b" }] }),
            "rules[0].name",
        ),
        (
            json!({ "rules": [{ "action": "allow", "name": "x" }, { "action": "deny", "name": "x" }] }),
            "used twice",
        ),
    ];
    for (value, needle) in cases {
        let message = parse_err(value.clone());
        assert!(message.contains(needle), "{value}: {message}");
        assert!(message.starts_with("policy test: "), "{message}");
    }
    let alias = catalog::all()
        .find_map(|s| s.aliases.first().copied())
        .expect("some tool has an alias");
    let message = parse_err(json!({ "rules": [{ "action": "allow", "tool": alias }] }));
    assert!(message.contains("is an alias"), "{message}");
}
