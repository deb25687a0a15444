//! Request building for the row features the guest tools introduced, without a network:
//! indexed families, defaults, fixed and renamed parameters, `format: urlencoded`
//! values, string arrays and result filters — each checked through the public
//! `schema::validate` → `backends::build_request` path every call takes.

use nandi_proxmox_mcp::backends::build_request;
use nandi_proxmox_mcp::catalog::{self, ResultFilter, ToolSpec};
use nandi_proxmox_mcp::schema::{self, ValidArgs};
use serde_json::{Value, json};

fn spec(name: &str) -> &'static ToolSpec {
    catalog::find(name).unwrap_or_else(|| panic!("{name} in the catalog"))
}

fn valid(spec: &ToolSpec, args: Value) -> ValidArgs {
    schema::validate(spec, args.as_object()).unwrap_or_else(|e| panic!("{}: {e:?}", spec.name))
}

/// (path, params) of the request a call would send.
fn request(name: &str, args: Value) -> (String, Vec<(String, String)>) {
    let spec = spec(name);
    let args = valid(spec, args);
    let (method, path) = spec.backend.method_and_path().expect("a REST row");
    let req = build_request(spec, method, path, &args, &[]);
    (req.path, req.params)
}

fn p(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn indexed_keys_go_out_under_the_clients_name() {
    let (path, params) = request(
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "net0": "virtio,bridge=vmbr0",
               "scsi30": "local-lvm:8", "cores": 2, "confirm": true}),
    );
    assert_eq!(path, "/nodes/pve01/qemu/101/config");
    assert_eq!(
        params,
        p(&[
            ("cores", "2"),
            ("net0", "virtio,bridge=vmbr0"),
            ("scsi30", "local-lvm:8")
        ])
    );
}

#[test]
fn indexed_keys_outside_the_range_are_rejected_with_the_pattern() {
    let s = spec("pve_qemu_create");
    for key in [
        "net32", "net99", "scsi31", "net007", "ide4", "sata6", "virtio16",
    ] {
        let err = schema::validate(
            s,
            json!({"node": "pve01", "vmid": 150, key: "x"}).as_object(),
        )
        .unwrap_err();
        assert!(err.errors[key].contains("key pattern ^"), "{key}: {err:?}");
    }
    // A family's bare prefix is not a parameter either.
    let err = schema::validate(
        s,
        json!({"node": "pve01", "vmid": 150, "net": "x"}).as_object(),
    )
    .unwrap_err();
    assert_eq!(err.errors["net"], "unknown parameter");
}

#[test]
fn schema_advertises_families_defaults_and_hides_fixed_parameters() {
    let schema = schema::input_schema(spec("pve_lxc_create"));
    let families = schema["patternProperties"].as_object().unwrap();
    let mp = families.keys().find(|k| k.starts_with("^mp(")).unwrap();
    let re = regex::Regex::new(mp).unwrap();
    assert!(re.is_match("mp0") && re.is_match("mp255") && !re.is_match("mp256"));
    assert!(schema["properties"].get("mp").is_none());
    let dump = schema::input_schema(spec("pve_get_qemu_cloudinit_dump"));
    assert_eq!(dump["properties"]["type"]["default"], "user");
    assert!(dump.get("required").unwrap().as_array().unwrap().len() == 2);
    let iso = schema::input_schema(spec("pve_list_iso_images"));
    assert!(iso["properties"].get("content").is_none());
    let restore = schema::input_schema(spec("pve_restore_lxc_backup"));
    assert!(restore["properties"].get("restore").is_none());
    assert!(restore["properties"].get("archive").is_some());
}

#[test]
fn defaults_and_fixed_values_are_sent() {
    let (_, params) = request(
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101}),
    );
    assert_eq!(params, p(&[("type", "user")]));
    let (_, params) = request(
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101, "type": "meta"}),
    );
    assert_eq!(params, p(&[("type", "meta")]));
    let (path, params) = request(
        "pve_list_storage_templates",
        json!({"node": "pve01", "storage": "local"}),
    );
    assert_eq!(path, "/nodes/pve01/storage/local/content");
    assert_eq!(params, p(&[("content", "vztmpl")]));
}

#[test]
fn lxc_restore_renames_archive_and_marks_the_restore() {
    let (path, params) = request(
        "pve_restore_lxc_backup",
        json!({"node": "pve01", "vmid": 300, "archive": "local:backup/x.tar.zst", "confirm": true}),
    );
    assert_eq!(path, "/nodes/pve01/lxc");
    assert_eq!(
        params,
        p(&[
            ("vmid", "300"),
            ("ostemplate", "local:backup/x.tar.zst"),
            ("restore", "1")
        ])
    );
}

#[test]
fn sshkeys_are_percent_encoded_like_encode_uri_component() {
    let (_, params) = request(
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "confirm": true,
               "sshkeys": "ssh-ed25519 AAAA+b/c= me@host\nssh-rsa B (x)!*'~_.-"}),
    );
    assert_eq!(
        params,
        p(&[(
            "sshkeys",
            "ssh-ed25519%20AAAA%2Bb%2Fc%3D%20me%40host%0Assh-rsa%20B%20(x)!*'~_.-"
        )])
    );
    // Other values are left alone (the form layer encodes them once).
    let (_, params) = request(
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "confirm": true, "ciuser": "a b@c"}),
    );
    assert_eq!(params, p(&[("ciuser", "a b@c")]));
}

#[test]
fn commands_are_argv_arrays() {
    // The request itself (one form key per item) is checked through the binary in
    // tests/it/tools_guests_templates.rs and tests/it/peer_tools.rs: the row is composite.
    let s = spec("pve_exec_qemu_guest_command");
    for bad in [json!([]), json!([""]), json!([1]), json!(7), json!("  ")] {
        let args = json!({"node": "pve01", "vmid": 101, "command": bad});
        assert!(schema::validate(s, args.as_object()).is_err(), "{bad}");
    }
}

#[test]
fn the_template_list_declares_its_filter() {
    assert_eq!(
        spec("pve_list_qemu_templates").result_filter,
        Some(ResultFilter::int("template", 1))
    );
    assert_eq!(spec("pve_list_qemu_vms").result_filter, None);
    let kept = ResultFilter::int("template", 1).apply(json!([
        {"vmid": 100, "template": 1}, {"vmid": 101}, {"vmid": 102, "template": 0}
    ]));
    assert_eq!(kept, json!([{"vmid": 100, "template": 1}]));
}

#[test]
fn the_two_template_tools_send_the_same_request() {
    let args = json!({"node": "pve01", "vmid": 9001, "disk": "scsi0", "confirm": true});
    assert_eq!(
        request("pve_qemu_create_template", args.clone()),
        request("pve_create_qemu_template", args)
    );
    assert!(
        spec("pve_create_qemu_template")
            .description
            .starts_with("Older name of pve_qemu_create_template")
    );
}
