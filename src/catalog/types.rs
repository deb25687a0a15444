//! The vocabulary of a catalog row: tiers, modules, categories, effects, flow legs, and the row
//! itself (`ToolSpec`); parameters, filters, gates and backends are re-exported from their files.
//!
//! Everything here is `Copy` and `const`-constructible so that rows can be written as
//! static data with struct-update syntax (`..ToolSpec::BASE`). The string forms
//! (`read-only`, `core`, `qemu`, …) are the ones users already write in their settings;
//! they must never change.

pub use super::param::{Location, Param, ParamKind};

pub use super::filter::{FilterValue, ResultFilter};

pub use super::gate::{ArgRule, When};

pub use super::backend::{Backend, CompositeOp, HttpMethod, SshOp, delete, get, pbs, post, put};

/// Access tier: how much a tool may change. Ordered: a tool is exposed only when its
/// tier is at or below the configured one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Reads only.
    ReadOnly,
    /// Reads plus guest power and other operational actions.
    ReadExecute,
    /// Everything, including creation, deletion and configuration changes.
    Full,
}

impl Tier {
    /// All tiers, lowest first.
    pub const ALL: [Tier; 3] = [Tier::ReadOnly, Tier::ReadExecute, Tier::Full];

    /// The wire form used in `PVE_ACCESS_TIER` and `_meta.accessTier`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::ReadOnly => "read-only",
            Tier::ReadExecute => "read-execute",
            Tier::Full => "full",
        }
    }

    /// Parses the exact wire form (case-sensitive, as the reference did).
    pub fn parse(value: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|tier| tier.as_str() == value)
    }
}

/// Module mode: `core` hides the `advanced` tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Module {
    /// Everyday tools, shown by default.
    Core,
    /// Specialist tools (access control, firewall, in-guest execution), shown on request.
    Advanced,
}

impl Module {
    /// Both modes.
    pub const ALL: [Module; 2] = [Module::Core, Module::Advanced];

    /// The wire form used in `PVE_MODULE_MODE` and `_meta.module`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Module::Core => "core",
            Module::Advanced => "advanced",
        }
    }

    /// Parses the exact wire form.
    pub fn parse(value: &str) -> Option<Module> {
        Module::ALL.into_iter().find(|m| m.as_str() == value)
    }
}

/// Tool category, as named in `PVE_CATEGORIES` and `_meta.category`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Category {
    Nodes,
    Cluster,
    Qemu,
    Lxc,
    Storage,
    Backup,
    Tasks,
    Network,
    Firewall,
    Pools,
    Access,
    Templates,
    Monitoring,
    Remote,
}

impl Category {
    /// Every category, in documentation order.
    pub const ALL: [Category; 14] = [
        Category::Nodes,
        Category::Cluster,
        Category::Qemu,
        Category::Lxc,
        Category::Storage,
        Category::Backup,
        Category::Tasks,
        Category::Network,
        Category::Firewall,
        Category::Pools,
        Category::Access,
        Category::Templates,
        Category::Monitoring,
        Category::Remote,
    ];

    /// The wire form (lower case).
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Nodes => "nodes",
            Category::Cluster => "cluster",
            Category::Qemu => "qemu",
            Category::Lxc => "lxc",
            Category::Storage => "storage",
            Category::Backup => "backup",
            Category::Tasks => "tasks",
            Category::Network => "network",
            Category::Firewall => "firewall",
            Category::Pools => "pools",
            Category::Access => "access",
            Category::Templates => "templates",
            Category::Monitoring => "monitoring",
            Category::Remote => "remote",
        }
    }

    /// Parses a category name (callers lower-case user input first).
    pub fn parse(value: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == value)
    }
}

/// What a tool does to the cluster. Drives the MCP hints and the retry class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads state; safe to retry on transient failures.
    Read,
    /// Changes state; never retried by the client.
    Write {
        /// May remove or interrupt something (the reference's `destructive` flag).
        destructive: bool,
        /// Repeating the same call has no further effect.
        idempotent: bool,
    },
}

impl Effect {
    /// Whether the tool only reads.
    pub const fn is_read(self) -> bool {
        matches!(self, Effect::Read)
    }

    /// The reference's `destructive` flag.
    pub const fn is_destructive(self) -> bool {
        matches!(
            self,
            Effect::Write {
                destructive: true,
                ..
            }
        )
    }

    /// The reference's `idempotent` flag (reads are idempotent).
    pub const fn is_idempotent(self) -> bool {
        match self {
            Effect::Read => true,
            Effect::Write { idempotent, .. } => idempotent,
        }
    }
}

/// The legs of the toxic flow a tool can form (untrusted input → sensitive data →
/// execution or egress). Destruction and egress are read from `effect` and `open_world`;
/// these flags say what the effect cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Legs {
    /// Returns text written by guests or other users (logs, agent output, descriptions).
    pub untrusted: bool,
    /// Returns secrets or secret-adjacent data (cloud-init, configs, tokens).
    pub sensitive: bool,
    /// Runs a command or program chosen by the caller.
    pub executes: bool,
}

impl Legs {
    /// None of the legs.
    pub const NONE: Legs = Legs {
        untrusted: false,
        sensitive: false,
        executes: false,
    };
    /// Output written by others.
    pub const UNTRUSTED: Legs = Legs {
        untrusted: true,
        ..Legs::NONE
    };
    /// Sensitive output.
    pub const SENSITIVE: Legs = Legs {
        sensitive: true,
        ..Legs::NONE
    };
    /// Sensitive output that others also write into (guest configs with descriptions).
    pub const SENSITIVE_UNTRUSTED: Legs = Legs {
        untrusted: true,
        sensitive: true,
        ..Legs::NONE
    };
    /// Executes, and returns what the command printed.
    pub const EXECUTES: Legs = Legs {
        untrusted: true,
        executes: true,
        ..Legs::NONE
    };
}

/// One tool: the whole truth about it.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Canonical wire name (`pve_…`), or a legacy name for the two deprecated list tools.
    pub name: &'static str,
    /// Short human title (MCP `title`).
    pub title: &'static str,
    /// What it does, when to use it, what it returns — written for a model.
    pub description: &'static str,
    /// Category for `PVE_CATEGORIES`.
    pub category: Category,
    /// Access tier.
    pub tier: Tier,
    /// Module.
    pub module: Module,
    /// Read or write, destructive, idempotent.
    pub effect: Effect,
    /// Every call needs approval (a person's where the client can ask, else `confirm: true`)
    /// and the tool is announced as needing a person.
    pub confirm: bool,
    /// Argument values that make an otherwise routine call need approval (see `gate.rs`).
    pub gated_when: &'static [ArgRule],
    /// The cluster may reach outside itself because of this tool (mail, remote storage,
    /// downloads): MCP `openWorldHint`, with what the row implies besides
    /// (`ToolSpec::opens_world`: egress the classifier finds, a program the caller chooses).
    pub open_world: bool,
    /// Which legs of the toxic flow the tool's output or action is (threat-model table).
    pub legs: Legs,
    /// Top-level answer keys that hold a secret the tool exists to return (a new token's
    /// `value`): masked below `full`, returned once at `full` with a notice (see `redact`).
    pub reveals: &'static [&'static str],
    /// Kept for compatibility; prefer another tool.
    pub deprecated: bool,
    /// Legacy wire names that call this tool.
    pub aliases: &'static [&'static str],
    /// A reference tool kept callable under its own name, served like an alias of the
    /// named tool (`PVE_ALIASES`): unlisted by default, so it costs no context.
    pub superseded_by: Option<&'static str>,
    /// The answer is a list that grows with the cluster (tasks, resources, storage
    /// content): it takes the shaping arguments `fields`/`limit`/`offset`.
    pub long_list: bool,
    /// Parameters, in the order shown to clients.
    pub params: &'static [Param],
    /// At least one of these parameters must be present (update tools).
    pub at_least_one_of: &'static [&'static str],
    /// How the call reaches Proxmox.
    pub backend: Backend,
    /// Per-attempt timeout in milliseconds.
    pub timeout_ms: u64,
    /// Keeps only the matching entries of a list answer (for filters the API lacks).
    pub result_filter: Option<ResultFilter>,
    /// The call starts a Proxmox worker and answers its UPID: it can become an MCP task
    /// and accepts `wait`/`wait_timeout`.
    pub starts_task: bool,
}

impl ToolSpec {
    /// Whether the row reads every configured cluster at once: it is only offered when the
    /// process serves several clusters (the plain case's tools stay exactly as they were).
    pub fn spans_clusters(&self) -> bool {
        matches!(
            self.backend,
            Backend::Composite(CompositeOp::ClustersOverview)
        )
    }

    /// Defaults for struct-update syntax in rows; every row overrides the identity fields.
    pub const BASE: ToolSpec = ToolSpec {
        name: "",
        title: "",
        description: "",
        category: Category::Nodes,
        tier: Tier::ReadOnly,
        module: Module::Core,
        effect: Effect::Read,
        confirm: false,
        gated_when: &[],
        open_world: false,
        legs: Legs::NONE,
        reveals: &[],
        deprecated: false,
        aliases: &[],
        superseded_by: None,
        long_list: false,
        params: &[],
        at_least_one_of: &[],
        backend: Backend::Rest {
            method: HttpMethod::Get,
            path: "/",
        },
        timeout_ms: 15_000,
        result_filter: None,
        starts_task: false,
    };

    /// Looks a parameter up by name (an indexed family by its prefix).
    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The indexed family a client key such as `net5` belongs to, whatever its index
    /// (the range is checked by validation, which names the allowed pattern).
    pub fn family_of(&self, key: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| {
            p.index.is_some()
                && key
                    .strip_prefix(p.name)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    }

    /// Reads may be retried on transient failures; writes never are.
    pub const fn retries_reads(&self) -> bool {
        self.effect.is_read()
    }
}

/// A guest power action (`POST /nodes/{node}/<kind>/{vmid}/status/<action>`): tier
/// read-execute, never retried. One builder for QEMU and LXC rows alike. The actions that
/// interrupt a running guest (stop, shutdown, reboot, reset, suspend) are the confirm-gated
/// ones and are destructive; start and resume only bring a guest up, so they are not.
#[allow(clippy::too_many_arguments)]
pub const fn power_action(
    category: Category,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    path: &'static str,
    confirm: bool,
    aliases: &'static [&'static str],
    params: &'static [Param],
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        category,
        tier: Tier::ReadExecute,
        effect: Effect::Write {
            destructive: confirm,
            idempotent: false,
        },
        confirm,
        aliases,
        params,
        backend: post(path),
        starts_task: true,
        ..ToolSpec::BASE
    }
}
