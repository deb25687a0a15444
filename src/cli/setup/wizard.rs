//! The interactive `setup` wizard: questions on standard input, answers in instance-file keys.
//!
//! Invariants: works on any standard input (a test drives it through a pipe), reading the secret
//! without echo only when standard input is a terminal; end of input aborts cleanly without
//! writing anything; the secret is never echoed or printed.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::{Map, json};

use super::{Answers, Common, SetupArgs, SshChoice, TlsChoice, core_keys, default_key_path};
use crate::catalog::Tier;
use crate::cli::{CliError, probe};
use crate::pve;

struct Prompter {
    input: Box<dyn BufRead>,
    tty: bool,
}

impl Prompter {
    fn ask(&mut self, question: &str, default: Option<&str>) -> Result<String, CliError> {
        match default {
            Some(d) => print!("{question} [{d}]: "),
            None => print!("{question}: "),
        }
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let n = self
            .input
            .read_line(&mut line)
            .map_err(|e| CliError::Runtime(format!("cannot read standard input: {e}")))?;
        if n == 0 {
            println!();
            return Err(CliError::Runtime(
                "setup aborted: standard input ended before the wizard finished; nothing was written"
                    .into(),
            ));
        }
        let answer = line.trim().to_owned();
        Ok(if answer.is_empty() {
            default.unwrap_or_default().to_owned()
        } else {
            answer
        })
    }

    fn required(&mut self, question: &str, default: Option<&str>) -> Result<String, CliError> {
        loop {
            let a = self.ask(question, default)?;
            if !a.is_empty() {
                return Ok(a);
            }
            println!("  an answer is required");
        }
    }

    fn yes(&mut self, question: &str, default_yes: bool) -> Result<bool, CliError> {
        let a = self.ask(question, Some(if default_yes { "Y/n" } else { "y/N" }))?;
        // An empty answer comes back as the shown default, which stands for `default_yes`.
        if a.eq_ignore_ascii_case("y/n") {
            return Ok(default_yes);
        }
        Ok(is_yes(&a))
    }

    fn secret(&mut self, question: &str) -> Result<String, CliError> {
        loop {
            let s = if self.tty {
                rpassword::prompt_password(format!("{question}: "))
                    .map_err(|e| CliError::Runtime(format!("cannot read the secret: {e}")))?
            } else {
                self.ask(question, None)?
            };
            let s = s.trim().to_owned();
            if s.chars().count() >= 10 {
                return Ok(s);
            }
            println!("  the token secret has at least 10 characters (Proxmox shows a UUID)");
        }
    }

    fn port(&mut self, question: &str, default: u16) -> Result<u16, CliError> {
        loop {
            let a = self.ask(question, Some(&default.to_string()))?;
            match a.parse::<u16>() {
                Ok(p) if p > 0 => return Ok(p),
                _ => println!("  a port is a whole number between 1 and 65535"),
            }
        }
    }
}

/// `y…`, `s`, `si…`, `sí…` (English and Spanish) mean yes.
pub(crate) fn is_yes(answer: &str) -> bool {
    let a = answer.trim().to_lowercase();
    a.starts_with('y') || a == "s" || a.starts_with("si") || a.starts_with("sí")
}

/// Runs the wizard; `Ok(None)` when the user has no token yet (bootstrap advice printed).
pub(crate) async fn run(args: &SetupArgs, c: &Common) -> Result<Option<(Answers, Tier)>, CliError> {
    let tty = std::io::stdin().is_terminal();
    let mut p = Prompter {
        input: Box::new(std::io::BufReader::new(std::io::stdin())),
        tty,
    };
    println!("nandi-proxmox-mcp setup — answers in [brackets] are the defaults.\n");
    if !p.yes(
        "Do you already have a Proxmox API token for this server?",
        true,
    )? {
        println!(
            "\nCreate one first: run `nandi-proxmox-mcp bootstrap --tier read-only` here, paste the \
             printed commands into a shell on a Proxmox node, note the token secret, then run \
             `nandi-proxmox-mcp setup` again."
        );
        return Ok(None);
    }
    let tier = if c.tier_given {
        c.tier
    } else {
        println!(
            "Access tier:\n  1) read-only (look, never change)\n  2) read-execute (also start/stop/migrate)\n  3) full (everything, destructive tools ask for confirmation)"
        );
        loop {
            match p.ask("Choose 1-3", Some("1"))?.as_str() {
                "1" => break Tier::ReadOnly,
                "2" => break Tier::ReadExecute,
                "3" => break Tier::Full,
                other => match Tier::parse(other) {
                    Some(t) => break t,
                    None => println!("  choose 1, 2 or 3"),
                },
            }
        }
    };
    let host = p.required("Proxmox host (name or IP)", None)?;
    let port = p.port("API port", 8006)?;
    let user = p.required("API user (without realm)", Some("mcp"))?;
    let realm = p.required("Realm", Some("pve"))?;
    let token_name = p.required("Token name", Some("nandi"))?;
    let mut secret = p.secret("Token secret")?;
    let tls = if p.yes("Does the node use its own self-signed certificate?", false)? {
        match probe::certificate(&host, port).await {
            Ok(cert) => {
                println!(
                    "  The node presents a certificate with SHA-256 fingerprint\n  {}\n  Compare it with `pvenode cert info` on the node (or its Certificates panel).",
                    cert.fingerprint
                );
                if p.yes("Pin this fingerprint?", true)? {
                    TlsChoice::Fingerprint(cert.fingerprint)
                } else {
                    TlsChoice::Insecure
                }
            }
            Err(e) => {
                println!("  could not read the certificate ({e}); certificate checks will be off");
                TlsChoice::Insecure
            }
        }
    } else {
        TlsChoice::Verify
    };
    let ssh = if p.yes(
        "Do you need to run commands inside containers (SSH)?",
        false,
    )? {
        let mut m = Map::new();
        m.insert(
            "sshHost".into(),
            json!(p.required("SSH address", Some(&host))?),
        );
        m.insert("sshPort".into(), json!(p.port("SSH port", 22)?));
        m.insert(
            "sshUser".into(),
            json!(p.required("SSH user", Some("root"))?),
        );
        let default_key = default_key_path(&c.paths).to_string_lossy().into_owned();
        m.insert(
            "sshKeyPath".into(),
            json!(p.required("Private key path", Some(&default_key))?),
        );
        m.insert("sshStrategy".into(), json!("auto"));
        SshChoice::Enabled(m)
    } else {
        SshChoice::Disabled
    };
    loop {
        let core = core_keys(
            &host,
            Some(port),
            &user,
            Some(&realm),
            &token_name,
            &secret,
            tls.clone(),
        );
        let proxmox = super::instance::validate_core(&core)?;
        if args.skip_connectivity {
            return Ok(Some((Answers { core, ssh }, tier)));
        }
        let client = pve::Client::new(&probe::connection(&proxmox))
            .map_err(|e| CliError::Config(e.to_string()))?;
        match probe::get(&client, "/nodes").await {
            Ok(_) => {
                println!("  Connection OK.");
                return Ok(Some((Answers { core, ssh }, tier)));
            }
            Err(e) => {
                let item = probe::diagnose("listNodes", &proxmox, &e).await;
                println!("  Connection failed: {}", item.detail);
                if let Some(fix) = &item.fix {
                    println!("  fix: {fix}");
                }
                println!("  1) retry  2) re-enter the secret  3) save anyway  4) abort");
                match p.ask("Choose 1-4", Some("1"))?.as_str() {
                    "2" => secret = p.secret("Token secret")?,
                    "3" => return Ok(Some((Answers { core, ssh }, tier))),
                    "4" => {
                        return Err(CliError::Runtime(
                            "setup aborted; nothing was written".into(),
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_yes;

    #[test]
    fn yes_in_english_and_spanish() {
        for y in ["y", "Yes", "s", "si", "Sí", "sí claro"] {
            assert!(is_yes(y), "{y}");
        }
        for n in ["n", "no", "", "x"] {
            assert!(!is_yes(n), "{n}");
        }
    }
}
