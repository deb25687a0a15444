//! In-process ed25519 key generation in OpenSSH's own file formats (no `ssh-keygen` needed).
//!
//! Invariants: the private key file is created with mode 0600 and never overwritten; the public
//! key is written beside it as `<path>.pub`; the private key bytes exist only in memory buffers
//! that are written once.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair};

const KEY_TYPE: &str = "ssh-ed25519";

/// A generated key pair's public half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedKey {
    /// Private key path.
    pub private: PathBuf,
    /// Public key path (`<private>.pub`).
    pub public: PathBuf,
    /// The public key line, `ssh-ed25519 AAAA… comment`.
    pub public_line: String,
}

fn put_string(buf: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(bytes);
}

fn public_blob(public: &[u8]) -> Vec<u8> {
    let mut blob = Vec::new();
    put_string(&mut blob, KEY_TYPE.as_bytes());
    put_string(&mut blob, public);
    blob
}

/// The `openssh-key-v1` private key file (unencrypted) for `seed`/`public`.
fn private_pem(seed: &[u8; 32], public: &[u8], comment: &str, check: u32) -> String {
    let mut private = Vec::new();
    private.extend_from_slice(&check.to_be_bytes());
    private.extend_from_slice(&check.to_be_bytes());
    put_string(&mut private, KEY_TYPE.as_bytes());
    put_string(&mut private, public);
    let mut secret = Vec::with_capacity(64);
    secret.extend_from_slice(seed);
    secret.extend_from_slice(public);
    put_string(&mut private, &secret);
    put_string(&mut private, comment.as_bytes());
    let mut pad = 1u8;
    while private.len() % 8 != 0 {
        private.push(pad);
        pad += 1;
    }
    let mut body = b"openssh-key-v1\0".to_vec();
    put_string(&mut body, b"none");
    put_string(&mut body, b"none");
    put_string(&mut body, b"");
    body.extend_from_slice(&1u32.to_be_bytes());
    put_string(&mut body, &public_blob(public));
    put_string(&mut body, &private);
    let encoded = STANDARD.encode(&body);
    let mut pem = String::from("-----BEGIN OPENSSH PRIVATE KEY-----\n");
    for chunk in encoded.as_bytes().chunks(70) {
        pem.push_str(&String::from_utf8_lossy(chunk));
        pem.push('\n');
    }
    pem.push_str("-----END OPENSSH PRIVATE KEY-----\n");
    pem
}

/// Generates an ed25519 key at `path` (0600) and `<path>.pub`. Fails if `path` exists.
pub fn generate(path: &Path, comment: &str) -> Result<GeneratedKey, String> {
    let rng = SystemRandom::new();
    let mut seed = [0u8; 32];
    rng.fill(&mut seed)
        .map_err(|_| "the system random generator failed".to_owned())?;
    let mut check = [0u8; 4];
    rng.fill(&mut check)
        .map_err(|_| "the system random generator failed".to_owned())?;
    let pair = Ed25519KeyPair::from_seed_unchecked(&seed)
        .map_err(|_| "could not derive the ed25519 key".to_owned())?;
    let public = pair.public_key().as_ref().to_vec();
    let pem = private_pem(&seed, &public, comment, u32::from_be_bytes(check));
    let public_line = format!(
        "{KEY_TYPE} {} {comment}",
        STANDARD.encode(public_blob(&public))
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    write_new(path, pem.as_bytes(), true)?;
    let public_path = pub_path(path);
    if let Err(e) = write_new(&public_path, format!("{public_line}\n").as_bytes(), false) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(GeneratedKey {
        private: path.to_path_buf(),
        public: public_path,
        public_line,
    })
}

/// `<path>.pub`.
pub fn pub_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

fn create_private_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn write_new(path: &Path, bytes: &[u8], private: bool) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = options
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_has_openssh_shape_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ssh/id_test");
        let key = generate(&path, "nandi-proxmox-mcp").unwrap();
        assert!(
            key.public_line
                .starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5")
        );
        let pem = std::fs::read_to_string(&path).unwrap();
        assert!(pem.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert!(generate(&path, "x").is_err(), "never overwrites");
    }
}
