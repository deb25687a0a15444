//! Cloud-init snippets listing and the guarded download-to-storage.
//!
//! Invariant: the download row is composite so that its URL passes the address guard
//! (`composite::address_guard`) before any request; it is `full`, `advanced`,
//! confirm-gated and open-world, so default settings never list it.

use super::params::{NODE, STORAGE};
use super::types::{
    Backend, Category, CompositeOp, Effect, Legs, Location, Module, Param, ParamKind, Tier,
    ToolSpec, get,
};

/// Rows of the snippet and download part of the `storage` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_cloudinit_snippets",
        title: "List cloud-init snippets",
        description: "Snippet files on a storage (cicustom user=/network=): volid, size (bytes), ctime.",
        category: Category::Storage,
        params: &[
            NODE,
            STORAGE,
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "snippets",
                "Snippets only.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_download_to_storage",
        title: "Download URL to storage",
        description: "Have a node download an ISO/template from a public http(s) URL (private hosts refused). Returns a UPID.",
        category: Category::Storage,
        legs: Legs::UNTRUSTED,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        open_world: true,
        params: &[
            Param::arg("node", ParamKind::String, "Node that downloads.")
                .matching(super::params::NODE_PATTERN)
                .required(),
            Param::arg("storage", ParamKind::String, "Target storage ID.")
                .matching(super::params::STORAGE_PATTERN)
                .required(),
            Param::arg(
                "url",
                ParamKind::String,
                "http:// or https:// URL of a public host.",
            )
            .pattern("^https?://[^\\s]+$", 2048)
            .required(),
            Param::arg("filename", ParamKind::String, "File name on the storage.")
                .matching("^[A-Za-z0-9][A-Za-z0-9._+-]{0,254}$")
                .required(),
            Param::arg("content", ParamKind::String, "`iso`, `vztmpl` or `import`.")
                .one_of(&["iso", "vztmpl", "import"])
                .required(),
            Param::arg("checksum", ParamKind::String, "Expected checksum (hex).")
                .matching("^[0-9A-Fa-f]{32,128}$"),
            Param::arg(
                "checksum-algorithm",
                ParamKind::String,
                "Algorithm of `checksum`.",
            )
            .one_of(&["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]),
            Param::arg(
                "compression",
                ParamKind::String,
                "Decompress with: `gz`, `lzo`, `zst`, `bz2`.",
            )
            .one_of(&["gz", "lzo", "zst", "bz2"]),
            Param::arg(
                "verify-certificates",
                ParamKind::Boolean,
                "Verify TLS (default true).",
            ),
        ],
        backend: Backend::Composite(CompositeOp::DownloadToStorage),
        timeout_ms: 30_000,
        ..ToolSpec::BASE
    },
];
