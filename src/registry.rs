//! The registry: the tools exposed under the current policy, built once per process.
//!
//! Invariant: `tools/list` and `tools/call` see the same set, because both read this one
//! structure: a listed name is callable, and the only callable names that are not listed
//! are hidden aliases (`PVE_ALIASES=hidden`, which also covers the reference tools a listed
//! tool supersedes, `ToolSpec::superseded_by`) and, on the compact surface
//! (`PVE_TOOL_SURFACE=compact`), the permitted tools the meta-tools reach. A tool the
//! policy filters out is in neither. The rmcp `Tool` values (schema, annotations, `_meta`)
//! are rendered from the entries once, on the first `tools/list` (start-up answers
//! `initialize` without them), then shared, so listing tools is a clone, not a rebuild; an
//! alias shares its canonical tool's schema `Arc`.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rmcp::model::{MetaObject, Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::catalog::{self, ToolSpec};
use crate::policy::{AliasMode, DEFAULT_OUTPUT_CAP, Settings};
use crate::schema;

/// Claude Code's key for "a person must approve each call of this tool".
pub const HUMAN_GATE_KEY: &str = "anthropic/requiresUserInteraction";

/// One wire name the server answers to.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The row behind it.
    pub spec: &'static ToolSpec,
    /// The name the client used (canonical name or alias).
    pub wire_name: &'static str,
    /// For an alias, the canonical name.
    pub alias_for: Option<&'static str>,
    /// Largest result in bytes before it is cut with a paging note (`PVE_OUTPUT_CAP_BYTES`).
    pub output_cap: usize,
    /// The cluster this entry serves, when the process serves several (`meta.cluster`);
    /// `None` in the plain single-cluster case.
    pub cluster: Option<&'static str>,
}

/// The exposed tools.
#[derive(Debug, Clone)]
pub struct Registry {
    entries: Vec<Entry>,
    index: HashMap<&'static str, usize>,
    /// Whether alias entries are listed too.
    aliases: AliasMode,
    /// The `tools/list` payload, rendered from `entries` on first use and shared by every
    /// clone: start-up answers `initialize` without building ~150 JSON schemas first.
    listed: Arc<OnceLock<Arc<Vec<Tool>>>>,
    /// The `cluster` argument every tool takes when the process serves several clusters:
    /// the names, and whether it is required (no default cluster).
    cluster_argument: Option<Arc<(Vec<&'static str>, bool)>>,
}

/// Which backends this process can serve; tools of a missing backend are not registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// SSH is configured (key path set, strategy not `disabled`).
    pub ssh: bool,
    /// At least one Proxmox Backup Server is configured: its rows are listed only then.
    pub pbs: bool,
}

impl Capabilities {
    /// Every backend available (listings, tests).
    pub const ALL: Capabilities = Capabilities {
        ssh: true,
        pbs: true,
    };
}

impl Registry {
    /// Builds the registry for `settings` from the whole catalog, assuming SSH is
    /// available and no Proxmox Backup Server is configured (its rows are listed only where
    /// one is; see [`Registry::build_for`]).
    pub fn build(settings: &Settings) -> Registry {
        Registry::build_for(
            settings,
            Capabilities {
                ssh: true,
                pbs: false,
            },
        )
    }

    /// Builds the registry for `settings`, leaving out tools whose backend is missing
    /// (the SSH tools without SSH settings): a tool that can only fail is not offered.
    pub fn build_for(settings: &Settings, capabilities: Capabilities) -> Registry {
        let mut registry = Registry::from_specs_with(
            catalog::all()
                .filter(|spec| capabilities.ssh || !spec.backend.is_ssh())
                .filter(|spec| capabilities.pbs || !spec.backend.is_pbs())
                // Offered by the cluster set only when there are several (`clusters`).
                .filter(|spec| !spec.spans_clusters())
                .filter(|spec| settings.decide(spec)),
            settings.aliases,
        );
        for entry in &mut registry.entries {
            entry.output_cap = settings.output_cap;
        }
        registry
    }

    /// Builds a registry from the given canonical rows with every alias listed.
    pub fn from_specs(specs: impl Iterator<Item = &'static ToolSpec>) -> Registry {
        Registry::from_specs_with(specs, AliasMode::Listed)
    }

    /// Builds a registry from the given canonical rows, serving aliases as `aliases` says.
    pub fn from_specs_with(
        specs: impl Iterator<Item = &'static ToolSpec>,
        aliases: AliasMode,
    ) -> Registry {
        let mut entries = Vec::new();
        for spec in specs {
            // A superseded reference tool is served as a legacy name of its successor:
            // callable unless aliases are off, listed only when they are listed.
            if let Some(successor) = spec.superseded_by {
                if aliases == AliasMode::Off {
                    continue;
                }
                entries.push(Entry {
                    spec,
                    wire_name: spec.name,
                    alias_for: Some(successor),
                    output_cap: DEFAULT_OUTPUT_CAP,
                    cluster: None,
                });
                continue;
            }
            entries.push(Entry {
                spec,
                wire_name: spec.name,
                alias_for: None,
                output_cap: DEFAULT_OUTPUT_CAP,
                cluster: None,
            });
            if aliases == AliasMode::Off {
                continue;
            }
            for alias in spec.aliases {
                entries.push(Entry {
                    spec,
                    wire_name: alias,
                    alias_for: Some(spec.name),
                    output_cap: DEFAULT_OUTPUT_CAP,
                    cluster: None,
                });
            }
        }
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, entry)| (entry.wire_name, i))
            .collect();
        Registry {
            entries,
            index,
            aliases,
            listed: Arc::new(OnceLock::new()),
            cluster_argument: None,
        }
    }

    /// Renders the `tools/list` payload: every canonical entry, and the alias entries when
    /// aliases are listed; a row's schema is built once and shared by its aliases.
    fn render_listing(&self) -> Vec<Tool> {
        let mut listed = Vec::new();
        let mut schema_of: Option<(&'static str, Arc<Map<String, Value>>)> = None;
        for entry in &self.entries {
            let listed_alias = self.aliases == AliasMode::Listed;
            if entry.alias_for.is_some() && !listed_alias {
                continue;
            }
            let spec = entry.spec;
            let input_schema = match &schema_of {
                Some((name, schema)) if *name == spec.name => schema.clone(),
                _ => {
                    let schema = Arc::new(schema::input_schema(spec));
                    schema_of = Some((spec.name, schema.clone()));
                    schema
                }
            };
            let is_alias_name = entry.wire_name != spec.name;
            listed.push(if is_alias_name {
                alias_tool(spec, entry.wire_name, input_schema)
            } else {
                canonical_tool(spec, input_schema)
            });
        }
        listed
    }

    /// Sets every entry's result cap (`PVE_OUTPUT_CAP_BYTES`).
    pub fn set_output_cap(&mut self, cap: usize) {
        for entry in &mut self.entries {
            entry.output_cap = cap;
        }
    }

    /// The same entries, each naming `cluster` (a process serving several clusters builds
    /// one registry per cluster; answers and task ids then name it).
    pub fn in_cluster(mut self, cluster: &'static str) -> Registry {
        for entry in &mut self.entries {
            entry.cluster = Some(cluster);
        }
        self
    }

    /// The same entries with every listed tool taking a `cluster` argument: one of `names`,
    /// required unless there is a default. The tools are rendered as usual first.
    pub fn with_cluster_argument(mut self, names: &[&'static str], required: bool) -> Registry {
        let listed = self
            .tools()
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                let spans = self
                    .get(&tool.name)
                    .is_some_and(|entry| entry.spec.spans_clusters());
                if spans {
                    return tool;
                }
                let mut schema = tool.input_schema.as_ref().clone();
                schema::add_cluster_property(&mut schema, names, required);
                tool.input_schema = Arc::new(schema);
                tool
            })
            .collect();
        self.cluster_argument = Some(Arc::new((names.to_vec(), required)));
        self.with_listing(listed)
    }

    /// The input schema a model sees for `entry`: the row's, with the `cluster` argument when
    /// the process serves several clusters (what `tools/list` shows, for surfaces that describe
    /// one tool at a time).
    pub fn input_schema_of(&self, entry: &Entry) -> Map<String, Value> {
        let mut schema = schema::input_schema(entry.spec);
        if let Some(argument) = &self.cluster_argument
            && !entry.spec.spans_clusters()
        {
            schema::add_cluster_property(&mut schema, &argument.0, argument.1);
        }
        schema
    }

    /// The same entries with another `tools/list` payload: the compact surface lists its
    /// meta-tools over these entries (see `compact`).
    pub fn with_listing(mut self, listed: Vec<Tool>) -> Registry {
        self.listed = Arc::new(OnceLock::from(Arc::new(listed)));
        self
    }

    /// Looks a wire name up; `None` for unknown or filtered names.
    pub fn get(&self, wire_name: &str) -> Option<&Entry> {
        self.index.get(wire_name).map(|&i| &self.entries[i])
    }

    /// Every exposed wire name with its row, in list order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The `tools/list` payload (rendered on first use, then shared). It is never freed: a
    /// registry lives as long as its server, and a short life (spawn, one listing, end of
    /// input) would otherwise spend a tenth of its instructions tearing the listing down.
    pub fn tools(&self) -> Arc<Vec<Tool>> {
        self.listed
            .get_or_init(|| {
                let listing = Arc::new(self.render_listing());
                std::mem::forget(Arc::clone(&listing));
                listing
            })
            .clone()
    }

    /// Number of canonical tools exposed.
    pub fn canonical_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.alias_for.is_none())
            .count()
    }

    /// The one sentence every surface (`tools`, the demo banner, the server instructions, the
    /// docs) uses for how many tools the settings expose out of the whole catalog, and how to
    /// see them all.
    pub fn exposure(&self, settings: &Settings) -> String {
        let total = catalog::all()
            .filter(|spec| spec.superseded_by.is_none() && !spec.spans_clusters())
            .count();
        let exposed = self.canonical_count();
        // Say whether the legacy names are in the listing or only answer calls.
        let how = match settings.aliases {
            AliasMode::Listed => "listed",
            _ => "callable, not listed",
        };
        let aliases = match self.alias_count() {
            0 => String::new(),
            1 => format!(", plus 1 legacy alias name ({how})"),
            n => format!(", plus {n} legacy alias names ({how})"),
        };
        let how_to_see_more = if exposed < total {
            format!(
                "; PVE_ACCESS_TIER=full PVE_MODULE_MODE=advanced exposes all {total} (SSH tools \
                 need SSH configured, PBS tools a Proxmox Backup Server; `nandi-proxmox-mcp \
                 tools --all-backends` lists them)"
            )
        } else {
            String::new()
        };
        // Names the user allow-listed but cannot see: say why, and what would expose them.
        let hidden: Vec<String> = settings
            .whitelist
            .iter()
            .filter(|name| !self.entries.iter().any(|e| e.wire_name == name.as_str()))
            .filter_map(|name| {
                let spec = catalog::find(name)?;
                let why = settings
                    .why_hidden(spec)
                    .unwrap_or_else(|| "runs over SSH, and SSH is not configured".to_owned());
                Some(format!("{name} ({why})"))
            })
            .collect();
        let hidden = if hidden.is_empty() {
            String::new()
        } else {
            format!("; allow-listed but not exposed: {}", hidden.join(", "))
        };
        format!(
            "{exposed} of {total} tools exposed{aliases} ({}){hidden}{how_to_see_more}",
            settings.summary()
        )
    }

    /// Number of aliases exposed.
    pub fn alias_count(&self) -> usize {
        self.entries.len() - self.canonical_count()
    }
}

/// Every tool figure the docs, `tools` and `doctor` state (definitions on
/// [`crate::docs::ToolCounts`], written at the top of `docs/TOOLS.md`), from registries built
/// the way a server builds them.
pub fn tool_counts() -> crate::docs::ToolCounts {
    use crate::catalog::{Module, Tier};
    let rows = catalog::all().count();
    let superseded = catalog::all()
        .filter(|spec| spec.superseded_by.is_some())
        .count();
    let multi_cluster_only = catalog::all()
        .filter(|spec| spec.superseded_by.is_none() && spec.spans_clusters())
        .count();
    let full = Settings {
        tier: Tier::Full,
        module: Module::Advanced,
        ..Settings::default()
    };
    let max = Registry::build_for(&full, Capabilities::ALL);
    let without_ssh = Registry::build_for(
        &full,
        Capabilities {
            ssh: false,
            pbs: true,
        },
    );
    let without_pbs = Registry::build_for(
        &full,
        Capabilities {
            ssh: true,
            pbs: false,
        },
    );
    let default = Registry::build_for(
        &Settings::default(),
        Capabilities {
            ssh: false,
            pbs: false,
        },
    );
    crate::docs::ToolCounts {
        rows,
        superseded,
        tools: rows - superseded,
        multi_cluster_only,
        one_cluster_max: max.canonical_count(),
        full_without_ssh: without_ssh.canonical_count(),
        ssh: max.canonical_count() - without_ssh.canonical_count(),
        pbs: max.canonical_count() - without_pbs.canonical_count(),
        default: default.canonical_count(),
        alias_names: max.alias_count(),
    }
}

/// MCP hints, all read from the row. `destructiveHint` and `idempotentHint` only mean
/// something for tools that write (MCP spec), so reads carry `readOnlyHint` alone;
/// `openWorldHint` is true where the cluster reaches outside itself (mail, remote storage,
/// downloads) and where the call runs a program of the caller's choosing
/// (`ToolSpec::opens_world`); the title lives on the tool itself.
pub fn annotations(spec: &ToolSpec) -> ToolAnnotations {
    // The row may say more than the effects classifier (a config overwrite is a destructive
    // update to MCP), never less: egress or destruction the classifier finds is announced.
    let possible = crate::catalog::effects::summary(spec).possible;
    let open_world = spec.opens_world();
    let destructive =
        spec.effect.is_destructive() || possible.contains(crate::effects::Effect::Destroy);
    let annotations = ToolAnnotations::new()
        .read_only(spec.effect.is_read())
        .open_world(open_world);
    if spec.effect.is_read() {
        annotations
    } else {
        annotations
            .destructive(destructive)
            .idempotent(spec.effect.is_idempotent())
    }
}

/// `_meta` of a canonical tool, in the reference's key order.
pub fn canonical_meta(spec: &ToolSpec) -> Map<String, Value> {
    let mut meta = Map::new();
    if spec.always_gated() {
        meta.insert(HUMAN_GATE_KEY.into(), Value::Bool(true));
    }
    meta.insert("category".into(), spec.category.as_str().into());
    meta.insert("accessTier".into(), spec.tier.as_str().into());
    meta.insert("destructive".into(), spec.effect.is_destructive().into());
    meta.insert("confirmRequired".into(), spec.always_gated().into());
    meta.insert("idempotent".into(), spec.effect.is_idempotent().into());
    meta.insert("transport".into(), "both".into());
    meta.insert("module".into(), spec.module.as_str().into());
    meta.insert("deprecated".into(), spec.deprecated.into());
    meta
}

/// `_meta` of an alias: the human gate (iff the canonical tool has it), `aliasFor`,
/// `deprecated: true`.
pub fn alias_meta(spec: &ToolSpec) -> Map<String, Value> {
    let mut meta = Map::new();
    if spec.always_gated() {
        meta.insert(HUMAN_GATE_KEY.into(), Value::Bool(true));
    }
    meta.insert("aliasFor".into(), spec.name.into());
    meta.insert("deprecated".into(), Value::Bool(true));
    meta
}

fn canonical_tool(spec: &'static ToolSpec, input_schema: Arc<Map<String, Value>>) -> Tool {
    Tool::new(spec.name, spec.description, input_schema)
        .with_title(spec.title)
        .with_annotations(annotations(spec))
        .with_meta(MetaObject(canonical_meta(spec)))
}

fn alias_tool(
    spec: &'static ToolSpec,
    alias: &'static str,
    input_schema: Arc<Map<String, Value>>,
) -> Tool {
    // The full description lives on the canonical tool; repeating it would double the
    // listing for no gain and steer models towards the legacy name.
    let description = format!(
        "Legacy name of {0}: same arguments and result. Prefer {0}.",
        spec.name
    );
    Tool::new(alias, description, input_schema)
        .with_title(spec.title)
        .with_annotations(annotations(spec))
        .with_meta(MetaObject(alias_meta(spec)))
}
