//! In-process ed25519 key generation in OpenSSH's own file formats (no `ssh-keygen` needed),
//! encoded by the `ssh-key` crate that russh already uses to read keys.
//!
//! Invariants: the private key file is created with mode 0600 and never overwritten; the public
//! key is written beside it as `<path>.pub`; the private key bytes exist only in memory buffers
//! that are written once.

use std::io::Write;
use std::path::{Path, PathBuf};

use ring::rand::{SecureRandom, SystemRandom};
use russh::keys::PrivateKey;
use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::{Ed25519Keypair, KeypairData};

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

/// The key pair for a fresh random seed, encoded by the `ssh-key` crate (the one russh reads
/// keys with): the unencrypted `openssh-key-v1` private file and the public line.
fn encode(seed: &[u8; 32], comment: &str) -> Result<(zeroize::Zeroizing<String>, String), String> {
    let key = PrivateKey::new(
        KeypairData::Ed25519(Ed25519Keypair::from_seed(seed)),
        comment,
    )
    .map_err(|e| format!("could not build the ed25519 key: {e}"))?;
    let pem = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| format!("could not encode the private key: {e}"))?;
    let public_line = key
        .public_key()
        .to_openssh()
        .map_err(|e| format!("could not encode the public key: {e}"))?;
    Ok((pem, public_line))
}

/// Generates an ed25519 key at `path` (0600) and `<path>.pub`. Fails if `path` exists.
pub fn generate(path: &Path, comment: &str) -> Result<GeneratedKey, String> {
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    SystemRandom::new()
        .fill(seed.as_mut())
        .map_err(|_| "the system random generator failed".to_owned())?;
    let (pem, public_line) = encode(&seed, comment)?;
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
        let private = russh::keys::decode_secret_key(&pem, None).unwrap();
        let public = std::fs::read_to_string(pub_path(&path)).unwrap();
        assert_eq!(public.trim_end(), key.public_line);
        assert_eq!(
            private.public_key().to_openssh().unwrap(),
            key.public_line,
            "the private file holds the public half"
        );
        assert!(key.public_line.ends_with(" nandi-proxmox-mcp"));
    }

    /// OpenSSH itself reads the files: `ssh-keygen -y` derives the same public line.
    #[test]
    #[cfg_attr(no_sshd, ignore = "needs OpenSSH (apt-get install openssh-server)")]
    fn openssh_reads_the_generated_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("id_test");
        let key = generate(&path, "nandi-proxmox-mcp").unwrap();
        let out = std::process::Command::new("ssh-keygen")
            .arg("-y")
            .arg("-f")
            .arg(&path)
            .output()
            .expect("ssh-keygen runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let derived = String::from_utf8(out.stdout).unwrap();
        let fields = |line: &str| {
            line.split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(fields(&derived), fields(&key.public_line));
    }
}
