//! The table of access-control and firewall calls shared by `tools_security.rs`: each
//! tool's arguments and the one request Proxmox must receive for them.

use serde_json::{Value, json};

/// One call and the single request Proxmox must receive for it.
pub struct Case {
    /// Wire name of the tool.
    pub tool: &'static str,
    /// Arguments of the call (confirm included where the tool needs it).
    pub args: Value,
    /// HTTP method Proxmox must receive.
    pub method: &'static str,
    /// Decoded path Proxmox must receive.
    pub path: &'static str,
    /// Query or form parameters Proxmox must receive, in any order.
    pub params: &'static [(&'static str, &'static str)],
}

/// Method, path and parameters of one expected request.
type Expected = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const fn case(
    tool: &'static str,
    method: &'static str,
    path: &'static str,
    params: &'static [(&'static str, &'static str)],
) -> Expected {
    (tool, method, path, params)
}

/// Every tool of the two categories, in an order where each call finds the state the
/// previous ones left (the user exists before it is updated, the rule before it moves).
pub fn cases() -> Vec<Case> {
    let table = [
        (
            case("pve_list_users", "GET", "/access/users", &[("full", "1")]),
            json!({"full": true}),
        ),
        (
            case("pve_list_roles", "GET", "/access/roles", &[]),
            json!({}),
        ),
        (
            case("pve_list_groups", "GET", "/access/groups", &[]),
            json!({}),
        ),
        (case("pve_list_acls", "GET", "/access/acl", &[]), json!({})),
        (
            case("pve_list_domains", "GET", "/access/domains", &[]),
            json!({}),
        ),
        (
            case(
                "pve_list_api_tokens",
                "GET",
                "/access/users/svc_mcp@pve/token",
                &[],
            ),
            json!({"userid": "svc_mcp@pve"}),
        ),
        (
            case(
                "pve_create_user",
                "POST",
                "/access/users",
                &[
                    ("userid", "carol@pve"),
                    ("password", "Corr3ct-Horse-Battery"),
                    ("email", "carol@example.com"),
                    ("groups", "admins"),
                    ("expire", "0"),
                    ("enable", "1"),
                ],
            ),
            json!({"userid": "carol@pve", "password": "Corr3ct-Horse-Battery",
                   "email": "carol@example.com", "groups": "admins", "expire": 0,
                   "enable": true, "confirm": true}),
        ),
        (
            case(
                "pve_update_user",
                "PUT",
                "/access/users/carol@pve",
                &[("email", "carol@example.org"), ("enable", "0")],
            ),
            json!({"userid": "carol@pve", "email": "carol@example.org", "enable": false,
                   "confirm": true}),
        ),
        (
            case(
                "pve_update_acl",
                "PUT",
                "/access/acl",
                &[
                    ("path", "/vms/101"),
                    ("roles", "PVEVMUser"),
                    ("users", "carol@pve"),
                    ("propagate", "1"),
                ],
            ),
            json!({"path": "/vms/101", "roles": "PVEVMUser", "users": "carol@pve",
                   "propagate": true, "confirm": true}),
        ),
        (
            case(
                "pve_create_api_token",
                "POST",
                "/access/users/carol@pve/token/automation",
                &[("comment", "ci"), ("privsep", "1")],
            ),
            json!({"userid": "carol@pve", "tokenid": "automation", "comment": "ci",
                   "privsep": true, "confirm": true}),
        ),
        (
            case(
                "pve_delete_api_token",
                "DELETE",
                "/access/users/carol@pve/token/automation",
                &[],
            ),
            json!({"userid": "carol@pve", "tokenid": "automation", "confirm": true}),
        ),
        (
            case("pve_delete_user", "DELETE", "/access/users/carol@pve", &[]),
            json!({"userid": "carol@pve", "confirm": true}),
        ),
        (
            case(
                "pve_list_cluster_firewall_rules",
                "GET",
                "/cluster/firewall/rules",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_get_cluster_firewall_options",
                "GET",
                "/cluster/firewall/options",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_list_cluster_firewall_aliases",
                "GET",
                "/cluster/firewall/aliases",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_list_cluster_firewall_ipsets",
                "GET",
                "/cluster/firewall/ipset",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_list_guest_firewall_rules",
                "GET",
                "/nodes/pve01/qemu/101/firewall/rules",
                &[],
            ),
            json!({"node": "pve01", "guest_type": "qemu", "vmid": 101}),
        ),
        (
            case(
                "pve_list_guest_firewall_rules",
                "GET",
                "/nodes/pve01/lxc/201/firewall/rules",
                &[],
            ),
            json!({"node": "pve01", "guest_type": "lxc", "vmid": 201}),
        ),
        (
            case(
                "pve_update_cluster_firewall_options",
                "PUT",
                "/cluster/firewall/options",
                &[
                    ("enable", "1"),
                    ("policy_in", "DROP"),
                    ("log_ratelimit", "enable=1,rate=10/minute,burst=20"),
                ],
            ),
            json!({"enable": 1, "policy_in": "DROP",
                   "log_ratelimit": "enable=1,rate=10/minute,burst=20", "confirm": true}),
        ),
        (
            case(
                "pve_create_cluster_firewall_rule",
                "POST",
                "/cluster/firewall/rules",
                &[
                    ("type", "in"),
                    ("action", "ACCEPT"),
                    ("proto", "tcp"),
                    ("dport", "443"),
                    ("source", "+management"),
                    ("comment", "https"),
                    ("pos", "0"),
                ],
            ),
            json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "443",
                   "source": "+management", "comment": "https", "pos": 0, "confirm": true}),
        ),
        (
            case(
                "pve_update_cluster_firewall_rule",
                "PUT",
                "/cluster/firewall/rules/0",
                &[("dport", "8443"), ("log", "info")],
            ),
            json!({"pos": 0, "dport": "8443", "log": "info", "confirm": true}),
        ),
        (
            case(
                "pve_delete_cluster_firewall_rule",
                "DELETE",
                "/cluster/firewall/rules/0",
                &[],
            ),
            json!({"pos": 0, "confirm": true}),
        ),
    ];
    let mut cases: Vec<Case> = table
        .into_iter()
        .map(|((tool, method, path, params), args)| Case {
            tool,
            args,
            method,
            path,
            params,
        })
        .collect();
    // The three guest rule tools, on a VM and on a container.
    for (kind, vmid, create, update, delete) in [
        (
            "qemu",
            101,
            "/nodes/pve01/qemu/101/firewall/rules",
            "/nodes/pve01/qemu/101/firewall/rules/0",
            "/nodes/pve01/qemu/101/firewall/rules/0",
        ),
        (
            "lxc",
            201,
            "/nodes/pve01/lxc/201/firewall/rules",
            "/nodes/pve01/lxc/201/firewall/rules/0",
            "/nodes/pve01/lxc/201/firewall/rules/0",
        ),
    ] {
        let guest = json!({"node": "pve01", "guest_type": kind, "vmid": vmid, "confirm": true});
        let with = |extra: Value| {
            let mut args = guest.clone();
            if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
                a.extend(e.clone());
            }
            args
        };
        cases.push(Case {
            tool: "pve_create_guest_firewall_rule",
            args: with(json!({"type": "in", "action": "ACCEPT", "macro": "SSH",
                              "source": "10.0.0.0/24", "iface": "net0", "enable": 1})),
            method: "POST",
            path: create,
            params: &[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("macro", "SSH"),
                ("source", "10.0.0.0/24"),
                ("iface", "net0"),
                ("enable", "1"),
            ],
        });
        cases.push(Case {
            tool: "pve_update_guest_firewall_rule",
            args: with(json!({"pos": 0, "action": "DROP", "comment": "closed"})),
            method: "PUT",
            path: update,
            params: &[("action", "DROP"), ("comment", "closed")],
        });
        cases.push(Case {
            tool: "pve_delete_guest_firewall_rule",
            args: with(json!({"pos": 0})),
            method: "DELETE",
            path: delete,
            params: &[],
        });
    }
    cases
}
