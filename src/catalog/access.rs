//! Access-control tools: users, groups, roles, realms, ACLs and API tokens.
//!
//! Every row here is `advanced` (specialist tools, hidden in `core` mode). Writes that
//! grant access — a new user, a new API token — are confirm-gated like the removals,
//! because an extra account or a leaked secret cannot be taken back by undoing the call.
//! Invariant: no row logs or echoes a password; the token secret is returned only by
//! `pve_create_api_token`, whose purpose it is.

use super::types::{
    Category, Effect, Legs, Module, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
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

const USERID_DESCRIPTION: &str = "User ID, `name@realm`.";

/// The user in the path.
const USERID: Param =
    Param::path("userid", ParamKind::String, USERID_DESCRIPTION).pattern(USERID_PATTERN, 64);

/// The token in the path.
const TOKENID: Param = Param::path(
    "tokenid",
    ParamKind::String,
    "Token name; full id `userid!tokenid`.",
)
.pattern(TOKENID_PATTERN, 64);

const EMAIL: Param =
    Param::body("email", ParamKind::String, "E-mail address.").pattern("^[^\\s@]+@[^\\s@]+$", 254);

const FIRSTNAME: Param =
    Param::body("firstname", ParamKind::String, "Given name.").pattern("^[^\\x00-\\x1F]*$", 1024);

const LASTNAME: Param =
    Param::body("lastname", ParamKind::String, "Family name.").pattern("^[^\\x00-\\x1F]*$", 1024);

const COMMENT: Param =
    Param::body("comment", ParamKind::String, "Free text.").pattern("^[^\\x00-\\x1F]*$", 2048);

const GROUPS: Param = Param::body(
    "groups",
    ParamKind::String,
    "Group IDs, comma list (replaces unless `append`).",
)
.pattern(ID_LIST_PATTERN, 1024);

const EXPIRE: Param =
    Param::body("expire", ParamKind::Integer, "Expiry, epoch s; 0 = never.").min(0);

const ENABLE: Param = Param::body("enable", ParamKind::Boolean, "false disables the account.");

/// Rows of the `access` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_users",
        title: "List users",
        description: "Users: userid, enable, expire (epoch s, 0 = never), names, email, groups. `full` adds API tokens (metadata, never secrets).",
        category: Category::Access,
        module: Module::Advanced,
        params: &[
            Param::query("enabled", ParamKind::Boolean, "Filter by enabled state."),
            Param::query("full", ParamKind::Boolean, "Add groups and API tokens."),
        ],
        backend: get("/access/users"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_roles",
        title: "List roles",
        description: "Roles and the privileges each grants; pick `roles` for pve_update_acl here.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/roles"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_groups",
        title: "List groups",
        description: "User groups: groupid, comment, member users.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/groups"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_acls",
        title: "List ACL entries",
        description: "ACL entries: path, type (user/group/token), ugid, roleid, propagate. Answers \"who may do what where\".",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/acl"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_domains",
        title: "List authentication realms",
        description: "Authentication realms (the part after `@`): realm, type (pam, pve, ldap, ad, openid), comment.",
        category: Category::Access,
        module: Module::Advanced,
        backend: get("/access/domains"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_api_tokens",
        title: "List a user's API tokens",
        description: "A user's API tokens: tokenid, comment, expire (epoch s), privsep. Secrets are never returned.",
        category: Category::Access,
        module: Module::Advanced,
        params: &[USERID],
        backend: get("/access/users/{userid}/token"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_user",
        title: "Create user",
        description: "Create a user (no rights until pve_update_acl; `pam` needs a Linux account). Returns null.",
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
                "Password, 8-64 characters (`pve` realm only).",
            )
            .matching("^[^\\x00-\\x1F]{8,64}$"),
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
        description: "Change a user (disabling also blocks their tokens). Returns null.",
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
                "Add to `groups`, not replace.",
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
        description: "Delete a user with their API tokens and ACL entries. Returns null.",
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
        description: "Grant (or with `delete` revoke) roles on a path to users, groups or tokens. Returns null.",
        category: Category::Access,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            Param::body(
                "path",
                ParamKind::String,
                "ACL path, e.g. \"/\", \"/vms/101\", \"/storage/local\", \"/pool/<id>\".",
            )
            .pattern(ACL_PATH_PATTERN, 512)
            .required(),
            Param::body("roles", ParamKind::String, "Role IDs, comma list.")
                .pattern(ID_LIST_PATTERN, 1024)
                .required(),
            Param::body("users", ParamKind::String, "User IDs, comma list.")
                .pattern(PRINCIPAL_LIST_PATTERN, 4096),
            Param::body("groups", ParamKind::String, "Group IDs, comma list.")
                .pattern(ID_LIST_PATTERN, 4096),
            Param::body(
                "tokens",
                ParamKind::String,
                "Token IDs (user@realm!token), comma list.",
            )
            .pattern(PRINCIPAL_LIST_PATTERN, 4096),
            Param::body(
                "propagate",
                ParamKind::Boolean,
                "Also below the path (default true).",
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
        description: "Create an API token; returns {full-tokenid, value}: the secret, shown only once. A privsep token has no rights until granted (pve_update_acl `tokens`).",
        category: Category::Access,
        reveals: &["value"],
        legs: Legs::SENSITIVE,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: GRANT,
        confirm: true,
        params: &[
            USERID,
            TOKENID,
            Param::body("comment", ParamKind::String, "Free text.")
                .pattern("^[^\\x00-\\x1F]*$", 2048),
            Param::body("expire", ParamKind::Integer, "Expiry, epoch s; 0 = never.").min(0),
            Param::body(
                "privsep",
                ParamKind::Boolean,
                "true (default): only ACLs granted to the token itself.",
            ),
        ],
        backend: post("/access/users/{userid}/token/{tokenid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_api_token",
        title: "Delete API token",
        description: "Revoke (delete) a user's API token; clients using it fail from now on. Returns null.",
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
