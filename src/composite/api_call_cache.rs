//! Where the generic API call gets the cluster's schema: memory, then a cache file, then
//! one fetch of `apidata.js` — per PVE version (`GET /version`: `version` + `repoid`).
//!
//! Invariants: a schema is fetched at most once per version per process while it is
//! fetchable (fetches are serialised, a failure is remembered for a minute so a broken
//! node is not hammered); the cache file name is built only from characters
//! `[A-Za-z0-9._-]` of the version answer, so an API answer cannot steer the file path;
//! a cache file that does not parse is ignored and replaced; the requests a lookup made are
//! reported to the caller, so a refusal after the lookup never claims nothing was sent.
//! The cache directory is `$XDG_CACHE_HOME/nandi-proxmox-mcp`, else `~/.cache/nandi-proxmox-mcp`;
//! a test process points it at its own temporary directory with [`use_cache_dir`], so tests
//! never read or write a user's cache.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::api_call_schema::{ApiSchema, extract_array};
use crate::pve::{self, ApiRequest, RetryPolicy};

/// How long a `GET /version` answer is reused before asking again (an upgrade is seen
/// after at most this long).
const VERSION_TTL: Duration = Duration::from_secs(300);
/// How long a failed fetch is remembered before the next try.
const FAILURE_TTL: Duration = Duration::from_secs(60);
/// Time allowed for fetching `apidata.js`.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Sub-directory of the user cache dir.
const CACHE_SUBDIR: &str = "nandi-proxmox-mcp";
/// The schema lookup's first request.
pub const VERSION_REQUEST: &str = "GET /version";
/// The schema fetch.
pub const SCHEMA_REQUEST: &str = "GET /pve-docs/api-viewer/apidata.js";

/// Where a schema came from, reported in the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaSource {
    /// Already in this process.
    Memory,
    /// The cache file of this version.
    CacheFile,
    /// Fetched from the cluster now.
    Cluster,
}

impl SchemaSource {
    /// Wire form.
    pub const fn as_str(self) -> &'static str {
        match self {
            SchemaSource::Memory => "memory",
            SchemaSource::CacheFile => "cache-file",
            SchemaSource::Cluster => "cluster",
        }
    }
}

/// A schema ready to judge calls.
#[derive(Debug, Clone)]
pub struct LoadedSchema {
    /// The index.
    pub schema: Arc<ApiSchema>,
    /// `version` of `GET /version`.
    pub version: String,
    /// Where it came from.
    pub source: SchemaSource,
}

#[derive(Default)]
struct Caches {
    versions: HashMap<String, (Instant, String, String)>,
    schemas: HashMap<String, Arc<ApiSchema>>,
    failures: HashMap<String, (Instant, String)>,
}

fn caches() -> &'static Mutex<Caches> {
    static CACHES: OnceLock<Mutex<Caches>> = OnceLock::new();
    CACHES.get_or_init(Mutex::default)
}

fn with_caches<T>(f: impl FnOnce(&mut Caches) -> T) -> T {
    let mut guard = caches().lock().unwrap_or_else(|p| p.into_inner());
    f(&mut guard)
}

fn fetch_lock() -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

fn dir_override() -> &'static Mutex<Option<PathBuf>> {
    static DIR: OnceLock<Mutex<Option<PathBuf>>> = OnceLock::new();
    DIR.get_or_init(Mutex::default)
}

/// Makes this process keep its schema cache files in `dir` (tests: a temporary directory),
/// ahead of the environment. The in-memory caches are per process and unaffected.
pub fn use_cache_dir(dir: impl Into<PathBuf>) {
    *dir_override().lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.into());
}

/// The schema for the cluster behind `pve`, or why there is none (the call then falls back
/// to structural checks). The second value lists the requests made to Proxmox for it
/// ([`VERSION_REQUEST`], [`SCHEMA_REQUEST`]); empty when everything came from memory or file.
pub async fn load(
    pve: &pve::Client,
    cancel: &CancellationToken,
) -> (Result<LoadedSchema, String>, Vec<&'static str>) {
    let mut requests = Vec::new();
    let base = pve.base_url().to_owned();
    let cached_version = with_caches(|c| {
        c.versions
            .get(&base)
            .filter(|(at, _, _)| at.elapsed() < VERSION_TTL)
            .map(|(_, v, k)| (v.clone(), k.clone()))
    });
    let (version, key) = match cached_version {
        Some(found) => found,
        None => {
            requests.push(VERSION_REQUEST);
            let answer = pve.call(
                ApiRequest::get("/version").retry(RetryPolicy::Reads),
                cancel,
            );
            match answer.await.result {
                Ok(value) => {
                    let (version, key) = version_key(&value);
                    with_caches(|c| {
                        c.versions
                            .insert(base.clone(), (Instant::now(), version.clone(), key.clone()))
                    });
                    (version, key)
                }
                Err(e) => return (Err(format!("GET /version failed: {e}")), requests),
            }
        }
    };
    let memory_key = format!("{base} {key}");
    let _serial = fetch_lock().lock().await;
    if let Some(schema) = with_caches(|c| c.schemas.get(&memory_key).cloned()) {
        return (Ok(loaded(schema, &version, SchemaSource::Memory)), requests);
    }
    let file = cache_file(&key);
    if let Some(schema) = file.as_ref().and_then(read_cache_file) {
        let schema = Arc::new(schema);
        with_caches(|c| c.schemas.insert(memory_key, schema.clone()));
        return (
            Ok(loaded(schema, &version, SchemaSource::CacheFile)),
            requests,
        );
    }
    let failed = with_caches(|c| {
        c.failures
            .get(&memory_key)
            .filter(|(at, _)| at.elapsed() < FAILURE_TTL)
            .map(|(_, why)| why.clone())
    });
    if let Some(why) = failed {
        return (Err(format!("{why} (not retried for a minute)")), requests);
    }
    requests.push(SCHEMA_REQUEST);
    let fetched = pve.fetch_api_viewer_data(FETCH_TIMEOUT, cancel).await;
    let parsed = fetched
        .map_err(|e| format!("fetching /pve-docs/api-viewer/apidata.js failed: {e}"))
        .and_then(|text| {
            let array = extract_array(&text).map_err(|e| e.to_string())?;
            let schema = ApiSchema::from_array(&array).map_err(|e| e.to_string())?;
            Ok((array, schema))
        });
    match parsed {
        Ok((array, schema)) => {
            if let Some(file) = &file {
                write_cache_file(file, &array);
            }
            let schema = Arc::new(schema);
            with_caches(|c| c.schemas.insert(memory_key, schema.clone()));
            (
                Ok(loaded(schema, &version, SchemaSource::Cluster)),
                requests,
            )
        }
        Err(why) => {
            tracing::warn!(error = %why, "no API schema; the generic API call applies structural checks only");
            with_caches(|c| c.failures.insert(memory_key, (Instant::now(), why.clone())));
            (Err(why), requests)
        }
    }
}

fn loaded(schema: Arc<ApiSchema>, version: &str, source: SchemaSource) -> LoadedSchema {
    LoadedSchema {
        schema,
        version: version.to_owned(),
        source,
    }
}

/// `(version, cache key)` from a `/version` answer; the key keeps only safe characters.
fn version_key(answer: &Value) -> (String, String) {
    let field = |name: &str| {
        answer
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned()
    };
    let version = field("version");
    let raw = format!("{version}-{}", field("repoid"));
    let key: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(80)
        .collect();
    (version, key)
}

/// `<dir>/apidata-<key>.json`, the directory chosen as the module documentation says.
fn cache_file(key: &str) -> Option<PathBuf> {
    let chosen = dir_override()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let dir = chosen.or_else(|| {
        absolute("XDG_CACHE_HOME")
            .or_else(|| absolute("HOME").map(|h| h.join(".cache")))
            .map(|d| d.join(CACHE_SUBDIR))
    })?;
    Some(dir.join(format!("apidata-{key}.json")))
}

fn read_cache_file(path: &PathBuf) -> Option<ApiSchema> {
    let text = std::fs::read_to_string(path).ok()?;
    match ApiSchema::parse(&text) {
        Ok(schema) => Some(schema),
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "ignoring an unreadable API schema cache file");
            None
        }
    }
}

/// Writes through a temporary file and a rename, so a reader never sees half a file.
fn write_cache_file(path: &PathBuf, array: &Value) {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, array.to_string())?;
        std::fs::rename(&temp, path)
    };
    if let Err(e) = write() {
        tracing::warn!(file = %path.display(), error = %e, "cannot write the API schema cache file");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn version_keys_keep_only_safe_characters() {
        let (version, key) = version_key(&json!({"version": "9.1.2", "repoid": "../../etc/x y"}));
        assert_eq!(version, "9.1.2");
        assert_eq!(key, "9.1.2-....etcxy");
        assert!(!key.contains('/'));
    }

    #[test]
    fn a_chosen_cache_dir_comes_before_the_users_cache() {
        let dir = std::env::temp_dir().join(format!("nandi-cache-test-{}", std::process::id()));
        use_cache_dir(&dir);
        assert_eq!(
            cache_file("9.1.2-abc"),
            Some(dir.join("apidata-9.1.2-abc.json"))
        );
    }
}
