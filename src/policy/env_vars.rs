//! The policy's environment variables, each with its meaning and default: the one table the
//! README's configuration section and the registry descriptor are generated from and checked
//! against (tests/docs.rs), so a variable cannot be added without its documentation.

use super::*;

/// The policy variables, documented (README table and registry descriptor are checked against it).
pub const ENV_VARS: &[EnvVarDoc] = &[
    EnvVarDoc {
        name: ENV_TIER,
        description: "Highest access tier exposed: `read-only`, `read-execute` or `full`.",
        default: "read-only",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_MODULE,
        description: "`core`, or `advanced` to add the specialist tools (access control, firewall, in-guest execution).",
        default: "core",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_CATEGORIES,
        description: "Comma list of categories to keep (e.g. `nodes,qemu`); unknown names are an error.",
        default: "all",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_WHITELIST,
        description: "Comma list of tools to keep; narrows, never lifts a tool above the tier.",
        default: "all",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_BLACKLIST,
        description: "Comma list of tools to remove; beats every other setting.",
        default: "none",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL,
        description: "Who approves gated calls: `auto` (a person where the client can ask, else `confirm=true`), `elicit` (a person, else refuse) or `confirm` (the `confirm=true` flag only, for unattended automation).",
        default: "auto",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_TIMEOUT,
        description: "Seconds a person has to answer an approval question before the call is refused.",
        default: "300",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_NOTIFY,
        description: "Webhook told when a client cannot ask a person: a gated call then waits for a person to approve or decline on the linked page (`confirm=true` no longer approves). An https URL (plain http only to a loopback host; anything else stops the start) gets a JSON POST `{tool, question, link, expires_at, requested_by}`; `ntfy+https://host/topic` posts the question to an ntfy topic with the link as `Click`. Cannot be combined with `PVE_HUMAN_APPROVAL=confirm`.",
        default: "none",
        secret: true,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_BASE_URL,
        description: "Public address of the approval page (`<base>/approve/<id>`) as a person's browser reaches it, e.g. behind a reverse proxy. Unset: the HTTP transport's own address when it listens on loopback, or the stdio page listener's.",
        default: "derived on loopback",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_VIA,
        description: "`form` asks clients that declare form elicitation in the client; `url` sends clients that declare URL elicitation to the approval page instead. Clients that declare only URL elicitation always get the page; where none can be reached (stdio without `PVE_APPROVAL_LISTEN`, `MCP_STATELESS=true`) their gated calls are refused, never confirmed by the model.",
        default: "form",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_LISTEN,
        description: "Under the stdio transport, `ip:port` where the approval page listens (started when this or `PVE_APPROVAL_NOTIFY` is set); a non-loopback address needs `PVE_APPROVAL_BASE_URL`. Unset, with the default taken (another project's server), the page takes an ephemeral loopback port and the links name it; a set address that is taken stops the start.",
        default: DEFAULT_APPROVAL_LISTEN,
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVERS,
        description: "Under OAuth (`MCP_AUTH_MODE=oauth`), who may decide on the approval page: `caller` (the person the calling token names, signed in at the authorization server) or `scope:<name>` (anyone who signs in with a token carrying that scope, e.g. `scope:proxmox:approve`). The person signs in through `MCP_OAUTH_APPROVAL_CLIENT_ID`. Without OAuth the link itself is the permission.",
        default: "caller",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_SURFACE,
        description: "`full` lists every permitted tool; `compact` lists three meta-tools (find, describe, call) over the same tools, for clients with small context or tool limits.",
        default: "full",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_ALIASES,
        description: "Legacy alias names (`stopVM`, `getVMStatus`…): `listed`, `hidden` (callable, not listed) or `off`.",
        default: "hidden",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_OUTPUT_CAP,
        description: "Largest tool result in bytes (1024 to 16777216); a bigger one is cut with a note saying how to page or narrow.",
        default: "65536",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_APPROVAL_KEY_FILE,
        description: "File with at least 32 bytes of secret (e.g. `openssl rand -hex 32`) that seals approval states; replicas behind one load balancer share it so any of them accepts an answer to a question another asked. Unset: a random key per process.",
        default: "random per process",
        secret: false,
    },
    EnvVarDoc {
        name: super::ENV_PEOPLE_FILE,
        description: "JSON file (mode 0600) mapping OAuth subjects to each person's own Proxmox API token: `{\"unmapped\": \"refuse\"|\"shared\", \"people\": {\"<sub>\": {\"tokenId\": \"user@realm!token\", \"secret\": \"…\"}}}`. An OAuth caller's calls then run with that person's Proxmox rights and Proxmox's task log names them; a caller the file does not name is refused (`unmapped: shared`: the server's token, said so in the audit). One cluster per server; see docs/DEPLOY.md.",
        default: "none (everyone acts with the server's token)",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_DOWNLOAD_ALLOW,
        description: "Comma list of host names (`mirror.lan`), addresses (`10.0.0.5`, `[fd00::5]`) or CIDRs (`10.0.0.0/8`, `fd00::/8`) `pve_download_to_storage` may fetch from although they are loopback, private, link-local or metadata addresses. Any other entry (a URL, a port, a wildcard, a prefix out of range) stops start-up with exit 2, naming it.",
        default: "none",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_ROUTINE,
        description: "`auto`: routine changes — start, resume, a snapshot, tags and description, a linked clone of a template, a backup of one guest that prunes nothing — run without a person, recorded in the audit as `routine`, unless the target is protected; `ask`: every change asks a person, as the previous release did. Anything consequential always asks.",
        default: "auto",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_PROTECTED_TAGS,
        description: "Comma list of guest tags that make every change to the guest ask a person (with `protection=1` and HA-managed guests, which always do).",
        default: DEFAULT_PROTECTED_TAGS,
        secret: false,
    },
    EnvVarDoc {
        name: ENV_PROTECTED_POOLS,
        description: "Comma list of pools whose guests are asked about on every change.",
        default: "none",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_LEASE_MAX_MINUTES,
        description: "Longest lease a person may grant when approving (minutes, up to 480); `0` never offers one.",
        default: "60",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_TASK_TTL,
        description: "Seconds an MCP task id (a task-starting call that declares the tasks extension) stays readable with `tasks/get`.",
        default: "86400",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_POLICY_FILE,
        description: "JSON file of operator rules (`allow`/`ask`/`deny` by effect, class, tool, node, pool, tag, VMID; docs/POLICY.md); outside `~/.nandi-proxmox-mcp/` used only once `trust`ed.",
        default: "none (built-in default)",
        secret: false,
    },
];
