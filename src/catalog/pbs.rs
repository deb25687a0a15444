//! Rows that ask a Proxmox Backup Server itself (category `backup`, names `pbs_…`): its
//! datastores, namespaces, backup groups and snapshots, verification, prune, garbage
//! collection, sync and verify jobs, and its tasks.
//!
//! Invariants: every row is a `Backend::Pbs` request, listed only where a PBS is configured;
//! its effects come from PBS's own schema (`effects::pbs`), so a prune and a garbage
//! collection are asked as destruction and a prune's preview (its `dry-run` fixed) is a read;
//! parameter names, types and patterns are PBS's (`tests/it/pbs_rows.rs` checks every row
//! against the pinned schema).

use super::types::{
    Category, Effect, HttpMethod, Legs, Location, Module, Param, ParamKind, Tier, ToolSpec, pbs,
};

/// Which PBS; only needed when several are configured.
const PBS: Param =
    Param::arg("pbs", ParamKind::String, "PBS name (if several).").pattern("^[a-z0-9-]{1,32}$", 32);

const NAME: &str = "^[A-Za-z0-9_][A-Za-z0-9._\\-]*$";
const NS_PATTERN: &str =
    "^(?:(?:(?:[A-Za-z0-9_][A-Za-z0-9._\\-]*)/){0,7}(?:[A-Za-z0-9_][A-Za-z0-9._\\-]*))?$";
const UPID: &str = "^UPID:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:[0-9A-Fa-f]{8,16}:[0-9A-Fa-f]{8}:[^:\\s]+:[^:\\s]*:[^:\\s]+:$";

const STORE: Param = Param::path("store", ParamKind::String, "Datastore name.").pattern(NAME, 32);
const NS: Param =
    Param::query("ns", ParamKind::String, "Namespace (default root).").pattern(NS_PATTERN, 256);
const BACKUP_TYPES: &[&str] = &["vm", "ct", "host"];
const TYPE: Param =
    Param::query("backup-type", ParamKind::String, "vm, ct or host.").one_of(BACKUP_TYPES);
const ID: Param =
    Param::query("backup-id", ParamKind::String, "Guest ID, e.g. 101.").pattern(NAME, 64);
const TIME: Param =
    Param::query("backup-time", ParamKind::Integer, "Snapshot time (epoch).").min(1);
const JOB: Param = Param::path("id", ParamKind::String, "The job ID.").pattern(NAME, 32);
const TASK: Param = Param::path("upid", ParamKind::String, "PBS task UPID.").pattern(UPID, 512);

/// In a form body (POST/PUT), the same parameters.
const fn body(p: Param) -> Param {
    Param {
        location: Location::Body,
        ..p
    }
}

const KEEP_LAST: Param = Param::body("keep-last", ParamKind::Integer, "The newest N.").min(1);
const KEEP_HOURLY: Param =
    Param::body("keep-hourly", ParamKind::Integer, "N hours, one each.").min(1);
const KEEP_DAILY: Param = Param::body("keep-daily", ParamKind::Integer, "N days, one each.").min(1);
const KEEP_WEEKLY: Param =
    Param::body("keep-weekly", ParamKind::Integer, "N weeks, one each.").min(1);
const KEEP_MONTHLY: Param =
    Param::body("keep-monthly", ParamKind::Integer, "N months, one each.").min(1);
const KEEP_YEARLY: Param =
    Param::body("keep-yearly", ParamKind::Integer, "N years, one each.").min(1);

/// The group a prune works on and its retention (PBS's own keep-* options).
const PRUNE: &[Param] = &[
    PBS,
    STORE,
    body(TYPE).required(),
    body(ID).required(),
    body(NS),
    KEEP_LAST,
    KEEP_HOURLY,
    KEEP_DAILY,
    KEEP_WEEKLY,
    KEEP_MONTHLY,
    KEEP_YEARLY,
];

/// The same, as a dry run: PBS lists what it would remove and removes nothing.
const PRUNE_PREVIEW: &[Param] = &[
    PBS,
    STORE,
    body(TYPE).required(),
    body(ID).required(),
    body(NS),
    KEEP_LAST,
    KEEP_HOURLY,
    KEEP_DAILY,
    KEEP_WEEKLY,
    KEEP_MONTHLY,
    KEEP_YEARLY,
    Param::fixed(
        "dry-run",
        ParamKind::Boolean,
        Location::Body,
        "1",
        "Only list what would be removed.",
    ),
];

const DESTROYS: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};
const ACTS: Effect = Effect::Write {
    destructive: false,
    idempotent: false,
};

const ROW: ToolSpec = ToolSpec {
    category: Category::Backup,
    ..ToolSpec::BASE
};

/// Rows of the PBS backend.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pbs_list_datastores",
        title: "List PBS datastores",
        description: "Datastores of a Proxmox Backup Server, with comments.",
        params: &[PBS],
        backend: pbs(HttpMethod::Get, "/admin/datastore"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_datastore_usage",
        title: "PBS datastore usage",
        description: "Every datastore's size, use, free space and fill estimate.",
        params: &[PBS],
        backend: pbs(HttpMethod::Get, "/status/datastore-usage"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_datastore_status",
        title: "PBS datastore status",
        description: "One datastore: space, backup counts by type, last GC.",
        params: &[PBS, STORE],
        backend: pbs(HttpMethod::Get, "/admin/datastore/{store}/status"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_namespaces",
        title: "List PBS namespaces",
        description: "Namespaces of a datastore, nested up to 8 deep (root is \"\").",
        params: &[
            PBS,
            STORE,
            Param::query("parent", ParamKind::String, "Below this namespace.")
                .pattern(NS_PATTERN, 256),
        ],
        backend: pbs(HttpMethod::Get, "/admin/datastore/{store}/namespace"),
        module: Module::Advanced,
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_backup_groups",
        title: "List PBS backup groups",
        description: "Backup groups (one per guest): last backup, count, owner.",
        params: &[PBS, STORE, NS],
        backend: pbs(HttpMethod::Get, "/admin/datastore/{store}/groups"),
        long_list: true,
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_snapshots",
        title: "List PBS snapshots",
        description: "Backup snapshots: time, size, verify state, protected, notes. Filter by guest.",
        params: &[PBS, STORE, NS, TYPE, ID],
        backend: pbs(HttpMethod::Get, "/admin/datastore/{store}/snapshots"),
        long_list: true,
        ..ROW
    },
    ToolSpec {
        name: "pbs_gc_status",
        title: "PBS garbage collection status",
        description: "The datastore's last garbage collection: when, removed, pending.",
        params: &[PBS, STORE],
        backend: pbs(HttpMethod::Get, "/admin/datastore/{store}/gc"),
        module: Module::Advanced,
        ..ROW
    },
    ToolSpec {
        name: "pbs_start_gc",
        title: "Start PBS garbage collection",
        description: "Remove chunks no snapshot references (frees what prunes left). Returns a PBS task UPID.",
        tier: Tier::Full,
        module: Module::Advanced,
        effect: DESTROYS,
        params: &[PBS, STORE],
        backend: pbs(HttpMethod::Post, "/admin/datastore/{store}/gc"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_verify",
        title: "Verify PBS backups",
        description: "Check snapshots' chunks: a datastore, a namespace, one guest or one snapshot. Returns a PBS task UPID.",
        tier: Tier::ReadExecute,
        effect: ACTS,
        params: &[
            PBS,
            STORE,
            body(NS),
            body(TYPE),
            body(ID),
            body(TIME),
            Param::body(
                "ignore-verified",
                ParamKind::Boolean,
                "Skip already verified (default true).",
            ),
            Param::body(
                "outdated-after",
                ParamKind::Integer,
                "Re-verify if older than N days.",
            )
            .min(0),
        ],
        backend: pbs(HttpMethod::Post, "/admin/datastore/{store}/verify"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_preview_prune",
        title: "Preview a PBS prune",
        description: "Which snapshots of one guest a prune would keep or remove.",
        params: PRUNE_PREVIEW,
        backend: pbs(HttpMethod::Post, "/admin/datastore/{store}/prune"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_prune",
        title: "Prune PBS snapshots",
        description: "Remove one guest's snapshots the retention does not keep (see pbs_preview_prune).",
        tier: Tier::Full,
        module: Module::Advanced,
        effect: DESTROYS,
        params: PRUNE,
        backend: pbs(HttpMethod::Post, "/admin/datastore/{store}/prune"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_set_snapshot_protected",
        title: "Protect a PBS snapshot",
        description: "Set or clear a snapshot's protection (a protected one is never pruned).",
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: false,
            idempotent: true,
        },
        params: &[
            PBS,
            STORE,
            body(TYPE).required(),
            body(ID).required(),
            body(TIME).required(),
            body(NS),
            Param::body("protected", ParamKind::Boolean, "true protects.").required(),
        ],
        backend: pbs(HttpMethod::Put, "/admin/datastore/{store}/protected"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_sync_jobs",
        title: "List PBS sync jobs",
        description: "Sync jobs: store, remote, schedule, last run state.",
        params: &[PBS],
        backend: pbs(HttpMethod::Get, "/admin/sync"),
        module: Module::Advanced,
        ..ROW
    },
    ToolSpec {
        name: "pbs_run_sync_job",
        title: "Run a PBS sync job",
        description: "Run a sync job now (it may remove vanished snapshots). Returns a PBS task UPID.",
        tier: Tier::Full,
        module: Module::Advanced,
        effect: DESTROYS,
        params: &[PBS, JOB],
        backend: pbs(HttpMethod::Post, "/admin/sync/{id}/run"),
        // It pulls from (or pushes to) the job's remote.
        open_world: true,
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_verify_jobs",
        title: "List PBS verify jobs",
        description: "Verification jobs: store, schedule, last run state.",
        params: &[PBS],
        backend: pbs(HttpMethod::Get, "/admin/verify"),
        module: Module::Advanced,
        ..ROW
    },
    ToolSpec {
        name: "pbs_run_verify_job",
        title: "Run a PBS verify job",
        description: "Run a verification job now. Returns a PBS task UPID.",
        tier: Tier::ReadExecute,
        effect: ACTS,
        params: &[PBS, JOB],
        backend: pbs(HttpMethod::Post, "/admin/verify/{id}/run"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_list_tasks",
        title: "List PBS tasks",
        description: "Recent PBS tasks, newest first: type, status, times.",
        params: &[
            PBS,
            Param::query("limit", ParamKind::Integer, "Max entries.").range(1, 500),
            Param::query("running", ParamKind::Boolean, "Running only."),
            Param::query("errors", ParamKind::Boolean, "Failed only."),
            Param::query("store", ParamKind::String, "One datastore's.").pattern(NAME, 32),
            Param::query("typefilter", ParamKind::String, "Task type, e.g. verify.")
                .pattern("^[a-z_-]{1,64}$", 64),
        ],
        backend: pbs(HttpMethod::Get, "/nodes/localhost/tasks"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_task_status",
        title: "PBS task status",
        description: "A PBS task: running or stopped, exit status.",
        params: &[PBS, TASK],
        backend: pbs(HttpMethod::Get, "/nodes/localhost/tasks/{upid}/status"),
        ..ROW
    },
    ToolSpec {
        name: "pbs_task_log",
        title: "PBS task log",
        description: "Lines of a PBS task's log, from start, limit lines.",
        params: &[
            PBS,
            TASK,
            Param::query("start", ParamKind::Integer, "First line (0-based).").min(0),
            Param::query("limit", ParamKind::Integer, "Lines (default 50).").range(1, 5000),
        ],
        legs: Legs {
            untrusted: true,
            ..Legs::NONE
        },
        backend: pbs(HttpMethod::Get, "/nodes/localhost/tasks/{upid}/log"),
        module: Module::Advanced,
        ..ROW
    },
];
