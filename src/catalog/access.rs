//! Access-control tools: users, groups, roles, realms, ACLs and API tokens.
//!
//! Every row here is `advanced` (specialist tools, hidden in `core` mode). Writes that
//! grant access — a new user, a new API token — are confirm-gated like the removals,
//! because an extra account or a leaked secret cannot be taken back by undoing the call.
//! Invariant: no row logs or echoes a password; the token secret is returned only by
//! `pve_create_api_token`, whose purpose it is.

use super::types::{
    Category, Effect, Module, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
};

/// `name@realm`, as Proxmox writes user ids (`root@pam`, `alice@pve`, `bob@ad`).
const USERID_PATTERN: &str = "^[^\\s:/@!,]+@[A-Za-z][A-Za-z0-9._-]+$";

/// A token id: a letter, then letters, digits, `.`, `-`, `_` (`automation`, `ci-runner`).
const TOKENID_PATTERN: &str = "^[A-Za-z][A-Za-z0-9._-]+$";

/// Comma-separated ids (groups, roles): Proxmox checks each one; this keeps out
/// spaces, control characters and anything that is not an id character.
const ID_LIST_PATTERN: &str = "^[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*$";

/// Comma-separated user ids (`a@pve,b@pam`) or full token ids (`a@pve!ci`).
const PRINCIPAL_LIST_PATTERN: &str = "^[A-Za-z0-9._@!-]+(?:,[A-Za-z0-9._@!-]+)*$";

/// An ACL path: `/`, or `/`-separated segments without spaces (`/vms/101`, `/storage/local`).
const ACL_PATH_PATTERN: &str = "^/(?:[A-Za-z0-9._@!:-]+(?:/[A-Za-z0-9._@!:-]+)*)?$";

/// A change of who may do what: never retried, may lock someone out or let someone in.
const GRANT: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

const USERID_DESCRIPTION: &str = "User ID `name@realm`, e.g. \"alice@pve\" or \"root@pam\".";

/// The user in the path.
const USERID: Param =
    Param::path("userid", ParamKind::String, USERID_DESCRIPTION).pattern(USERID_PATTERN, 64);

/// The token in the path.
const TOKENID: Param = Param::path(
    "tokenid",
    ParamKind::String,
    "Token name, e.g. \"automation\"; the full token id is `userid!tokenid`.",
)
.pattern(TOKENID_PATTERN, 64);

const EMAIL: Param =
    Param::body("email", ParamKind::String, "E-mail address.").pattern("^[^\\s@]+@[^\\s@]+$", 254);

const FIRSTNAME: Param = Param::body("firstname", ParamKind::String, "Given name (free text).")
    .pattern("^[^\\x00-\\x1F]*$", 1024);

const LASTNAME: Param = Param::body("lastname", ParamKind::String, "Family name (free text).")
    .pattern("^[^\\x00-\\x1F]*$", 1024);

const COMMENT: Param =
    Param::body("comment", ParamKind::String, "Free-text note.").pattern("^[^\\x00-\\x1F]*$", 2048);

const GROUPS: Param = Param::body(
    "groups",
    ParamKind::String,
    "Group IDs, comma list (\"admins,ops\"); on update replaces the list unless `append`.",
)
.pattern(ID_LIST_PATTERN, 1024);

const EXPIRE: Param = Param::body(
    "expire",
    ParamKind::Integer,
    "Expiry in Unix epoch seconds (1767225600 = 2026-01-01 UTC); 0 = never.",
)
.min(0);

const ENABLE: Param = Param::body(
    "enable",
    ParamKind::Boolean,
    "false disables the account (default true).",
);

/// Rows of the `access` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_users",
        title: "List users",
        description: "List Proxmox users: userid (`name@realm`), enable (1/0), expire (epoch seconds, 0 = never), firstname, lastname, email, comment, groups (comma list) and realm-type. With `full`, also each user's API tokens (tokenid, privsep, expire — never secrets). Use it to audit accounts or find a userid for the other access tools.",
        category: Category::Access,
        module: Module::Advanced,
        params: &[
            Param::query(
                "enabled",
                ParamKind::Boolean,
                "true = only enabled accounts, false = only disabled ones; omit for all.",
            ),
            Param::query(
                "full",
                ParamKind::Boolean,
                "Also return each user's group memberships and API tokens (token metadata only).",
            ),
        ],
        backend: get("/access/users"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_roles",
        title: "List roles",
        description: "List roles and the privileges each grants: roleid (e.g. \"PVEAdmin\", \"PVEAuditor\", \"PVEVMUser\"), privs (comma list such as \"VM.Audit,VM.PowerMgmt\") and special (1 = built-in). Use it to pick the `roles` of pve_update_acl.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/roles"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_groups",
        title: "List groups",
        description: "List user groups: groupid, comment and users (comma list of `name@realm`). Groups can be granted roles with pve_update_acl instead of granting each user.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/groups"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_acls",
        title: "List ACL entries",
        description: "List every access-control entry: path (e.g. \"/\", \"/vms/101\", \"/storage/local\"), type (user, group or token), ugid (who), roleid (what) and propagate (1 = also applies below the path). Answers \"who may do what where\".",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/acl"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_domains",
        title: "List authentication realms",
        description: "List authentication realms (the part after `@` in a userid): realm (e.g. \"pam\", \"pve\"), type (pam, pve, ldap, ad, openid), comment and tfa. Use it to choose the realm of a new user.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/domains"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_api_tokens",
        title: "List a user's API tokens",
        description: "List the API tokens of one user: tokenid, comment, expire (epoch seconds, 0 = never) and privsep (1 = the token has its own, separately granted permissions; 0 = it has all of the user's). Secrets are never returned — they are shown once, at creation.",
        category: Category::Access,
        module: Module::Advanced,
        params: &[USERID],
        backend: get("/access/users/{userid}/token"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_user",
        title: "Create user",
        description: "Create a Proxmox user. A `pve`-realm user can get a password here; `pam` users must also exist as Linux accounts on the nodes. The user can do nothing until granted roles with pve_update_acl. Requires confirm=true after asking the user. Returns null on success. The password is sent to Proxmox only and never logged or returned.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            Param::body("userid", ParamKind::String, USERID_DESCRIPTION)
                .pattern(USERID_PATTERN, 64)
                .required(),
            Param::body(
                "password",
                ParamKind::String,
                "Password, 8–64 characters (`pve` realm only). Never logged.",
            )
            .pattern("^[^\\x00-\\x1F]{8,64}$", 64),
            EMAIL,
            FIRSTNAME,
            LASTNAME,
            COMMENT,
            GROUPS,
            EXPIRE,
            ENABLE,
        ],
        backend: post("/access/users"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_user",
        title: "Update user",
        description: "Change a user's details: e-mail, names, comment, group memberships, expiry, or enable/disable the account (disabling blocks logins and the user's API tokens). Pass at least one field. Requires confirm=true after asking the user. Returns null.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            USERID,
            EMAIL,
            ENABLE,
            FIRSTNAME,
            LASTNAME,
            COMMENT,
            GROUPS,
            Param::body(
                "append",
                ParamKind::Boolean,
                "With `groups`: add to these groups instead of replacing.",
            ),
            EXPIRE,
        ],
        at_least_one_of: &[
            "email",
            "enable",
            "firstname",
            "lastname",
            "comment",
            "groups",
            "expire",
        ],
        backend: put("/access/users/{userid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_user",
        title: "Delete user",
        description: "Delete a user together with their API tokens and ACL entries. Sessions and automation using the account stop working. Requires confirm=true after asking the user. Returns null.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[USERID],
        backend: delete("/access/users/{userid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_acl",
        title: "Grant or revoke roles",
        description: "Grant roles on a path to users, groups or API tokens — or revoke them with `delete`. Example: path \"/vms/101\", roles \"PVEVMUser\", users \"alice@pve\". Name at least one of users, groups, tokens. Requires confirm=true after asking the user. Returns null; check the result with pve_list_acls.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            Param::body(
                "path",
                ParamKind::String,
                "ACL path: \"/\" (all), \"/vms/101\", \"/storage/local\", \"/pool/<id>\", \"/nodes/pve01\".",
            )
            .pattern(ACL_PATH_PATTERN, 512)
            .required(),
            Param::body(
                "roles",
                ParamKind::String,
                "Role IDs, comma list: \"PVEVMUser\" or \"PVEAuditor,PVEVMUser\".",
            )
            .pattern(ID_LIST_PATTERN, 1024)
            .required(),
            Param::body(
                "users",
                ParamKind::String,
                "User IDs, comma list: \"alice@pve,bob@pam\".",
            )
            .pattern(PRINCIPAL_LIST_PATTERN, 4096),
            Param::body(
                "groups",
                ParamKind::String,
                "Group IDs, comma list: \"admins\".",
            )
            .pattern(ID_LIST_PATTERN, 4096),
            Param::body(
                "tokens",
                ParamKind::String,
                "Full token IDs, comma list: \"svc@pve!ci\" (for privsep tokens).",
            )
            .pattern(PRINCIPAL_LIST_PATTERN, 4096),
            Param::body(
                "propagate",
                ParamKind::Boolean,
                "Also apply below the path (default true).",
            ),
            Param::body(
                "delete",
                ParamKind::Boolean,
                "true = revoke instead of grant.",
            ),
        ],
        at_least_one_of: &["users", "groups", "tokens"],
        backend: put("/access/acl"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_api_token",
        title: "Create API token",
        description: "Create an API token for a user and return its secret — the purpose of this tool: {full-tokenid, info, value}, the secret in `value`, shown by Proxmox only this once; give it to the person who asked and repeat it nowhere else. A privsep token (default) has no rights until granted via pve_update_acl `tokens`. Requires confirm=true after asking the user.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            USERID,
            TOKENID,
            Param::body(
                "comment",
                ParamKind::String,
                "Free-text note.",
            )
            .pattern("^[^\\x00-\\x1F]*$", 2048),
            Param::body(
                "expire",
                ParamKind::Integer,
                "Expiry in Unix epoch seconds; 0 = never; default: the user's.",
            )
            .min(0),
            Param::body(
                "privsep",
                ParamKind::Boolean,
                "true (default): only ACLs granted to the token; false: all of the user's rights.",
            ),
        ],
        backend: post("/access/users/{userid}/token/{tokenid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_api_token",
        title: "Delete API token",
        description: "Revoke (delete) one API token of a user; anything authenticating with it fails from now on. Requires confirm=true after asking the user. Returns null.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[USERID, TOKENID],
        backend: delete("/access/users/{userid}/token/{tokenid}"),
        ..ToolSpec::BASE
    },
];
