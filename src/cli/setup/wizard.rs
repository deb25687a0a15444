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
        let answer = self.ask_raw(question, default)?;
        Ok(if answer.is_empty() {
            default.unwrap_or_default().to_owned()
        } else {
            answer
        })
    }

    /// Shows `default` in brackets but returns the answer as typed (empty for Enter), so the
    /// caller can tell a choice from a default.
    fn ask_raw(&mut self, question: &str, default: Option<&str>) -> Result<String, CliError> {
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
        Ok(line.trim().to_owned())
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

    /// A part of the token id, asked again until Proxmox could accept it.
    fn api_id(&mut self, question: &str, default: &str, what: &str) -> Result<String, CliError> {
        loop {
            let a = self.required(question, Some(default))?;
            match super::check_api_id(what, &a) {
                Ok(()) => return Ok(a),
                Err(e) => println!("  {e}"),
            }
        }
    }

    /// A yes/no question: Enter takes the default; an answer that is neither yes nor no is
    /// asked again (it never counts as No).
    fn yes(&mut self, question: &str, default_yes: bool) -> Result<bool, CliError> {
        loop {
            let a = self.ask_raw(question, Some(if default_yes { "Y/n" } else { "y/N" }))?;
            if a.is_empty() {
                return Ok(default_yes);
            }
            if is_yes(&a) {
                return Ok(true);
            }
            if is_no(&a) {
                return Ok(false);
            }
            println!("  answer y (yes) or n (no)");
        }
    }

    /// The Proxmox host, asked again until it is a bare name or IP (the rule the flag obeys).
    fn host(&mut self, question: &str) -> Result<String, CliError> {
        loop {
            let a = self.required(question, None)?;
            match crate::config::check_host(&a) {
                Ok(()) => return Ok(a),
                Err(e) => println!("  the host {e}"),
            }
        }
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

/// The word a person types to turn certificate checks off; nothing shorter or vaguer (a `y`,
/// an Enter) does it.
pub(crate) const INSECURE_WORD: &str = "insecure";

/// Whether `answer` confirms turning certificate checks off: exactly [`INSECURE_WORD`]
/// (any case, surrounding blanks ignored).
pub(crate) fn insecure_confirmed(answer: &str) -> bool {
    answer.trim().eq_ignore_ascii_case(INSECURE_WORD)
}

/// The certificate question: verify (default), pin the fingerprint the node presents, or —
/// only when the person types [`INSECURE_WORD`] — no checks. Anything else stops setup
/// before anything is written, with the way to pin or install the CA.
async fn tls_question(p: &mut Prompter, host: &str, port: u16) -> Result<TlsChoice, CliError> {
    // Self-signed is what a fresh Proxmox node has, so it is the default.
    if !p.yes("Does the node use its own self-signed certificate?", true)? {
        return Ok(TlsChoice::Verify);
    }
    let fingerprint = match probe::certificate(host, port).await {
        Ok(cert) => {
            println!(
                "  The node presents a certificate with SHA-256 fingerprint\n  {}\n  Compare it with `pvenode cert info` on the node (or its Certificates panel).",
                cert.fingerprint
            );
            if p.yes("Pin this fingerprint?", true)? {
                return Ok(TlsChoice::Fingerprint(cert.fingerprint));
            }
            Some(cert.fingerprint)
        }
        Err(e) => {
            println!("  Could not read the certificate ({e}).");
            None
        }
    };
    println!(
        "  Without a pin or a CA file the only way left is to turn certificate checks OFF:\n  \
         anything between here and the node could then pose as the node and read the API token."
    );
    let answer = p.ask_raw(
        &format!("  Type `{INSECURE_WORD}` to turn certificate checks OFF, or press Enter to stop"),
        Some("stop"),
    )?;
    if insecure_confirmed(&answer) {
        println!("  Certificate checks will be OFF for this instance.");
        return Ok(TlsChoice::Insecure);
    }
    let fix = match &fingerprint {
        Some(fp) => format!(
            "run setup again and pin the certificate (answer yes, or pass `--tls-fingerprint {fp}`), \
             or install the node's CA with `--tls-ca-file pve-root-ca.pem` (a copy of \
             /etc/pve/pve-root-ca.pem from the node)"
        ),
        None => format!(
            "check that {host}:{port} is the node's API (pveproxy, HTTPS), then run setup again \
             and pin its certificate (`--tls-fingerprint`), or install its CA (`--tls-ca-file`)"
        ),
    };
    println!("  fix: {fix}");
    Err(CliError::Runtime(
        "setup stopped: certificate checks stay on, and nothing was written".into(),
    ))
}

/// `n`, `no` (English and Spanish) mean no.
pub(crate) fn is_no(answer: &str) -> bool {
    matches!(answer.trim().to_lowercase().as_str(), "n" | "no" | "nope")
}

/// `y…`, `s`, `si…`, `sí…` (English and Spanish) mean yes.
pub(crate) fn is_yes(answer: &str) -> bool {
    let a = answer.trim().to_lowercase();
    a.starts_with('y') || a == "s" || a.starts_with("si") || a.starts_with("sí")
}

/// Runs the wizard; `Ok(None)` when the user has no token yet (bootstrap advice printed).
/// The flag says whether the person chose the tier (a typed answer or `--access-tier`)
/// rather than taking the default.
pub(crate) async fn run(
    args: &SetupArgs,
    c: &Common,
) -> Result<Option<(Answers, Tier, bool)>, CliError> {
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
    let (tier, tier_chosen) = if c.tier_given {
        (c.tier, true)
    } else {
        println!(
            "Access tier:\n  1) read-only (look, never change)\n  2) read-execute (also start/stop/migrate)\n  3) full (everything, destructive tools ask for confirmation)"
        );
        loop {
            let typed = p.ask_raw("Choose 1-3", Some("1"))?;
            let tier = match typed.as_str() {
                "" | "1" => Some(Tier::ReadOnly),
                "2" => Some(Tier::ReadExecute),
                "3" => Some(Tier::Full),
                other => Tier::parse(other),
            };
            match tier {
                // Only an empty answer takes the default; a typed `1` is a choice.
                Some(t) => break (t, !typed.is_empty()),
                None => println!("  choose 1, 2 or 3"),
            }
        }
    };
    let host = p.host("Proxmox host (name or IP)")?;
    let port = p.port("API port", 8006)?;
    let user = p.api_id("API user (without realm)", "mcp", "user")?;
    let realm = p.api_id("Realm", "pve", "realm")?;
    let token_name = p.api_id("Token name (the part after `!`)", "nandi", "token name")?;
    let mut secret = p.secret("Token secret")?;
    let mut tls = tls_question(&mut p, &host, port).await?;
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
            return Ok(Some((Answers { core, ssh }, tier, tier_chosen)));
        }
        let client = pve::Client::new(&probe::connection(&proxmox))
            .map_err(|e| CliError::Config(e.to_string()))?;
        match probe::get(&client, "/nodes").await {
            Ok(_) => {
                println!("  Connection OK.");
                return Ok(Some((Answers { core, ssh }, tier, tier_chosen)));
            }
            Err(e) => {
                let item = probe::diagnose("listNodes", &proxmox, &e).await;
                println!("  Connection failed: {}", item.detail);
                if let Some(fix) = &item.fix {
                    println!("  fix: {fix}");
                }
                // A certificate the check refused can be pinned here, after comparing it.
                let presented = match (&e, &tls) {
                    (pve::PveError::Tls(_), TlsChoice::Verify) => {
                        probe::certificate(&host, port).await.ok()
                    }
                    _ => None,
                };
                match &presented {
                    Some(cert) => {
                        println!(
                            "  The node presents SHA-256 fingerprint {} (compare with `pvenode cert info`).",
                            cert.fingerprint
                        );
                        println!(
                            "  1) retry  2) re-enter the secret  3) save anyway  4) abort  5) pin it"
                        );
                    }
                    None => {
                        println!("  1) retry  2) re-enter the secret  3) save anyway  4) abort")
                    }
                }
                let last = if presented.is_some() { "5" } else { "4" };
                match p.ask(&format!("Choose 1-{last}"), Some("1"))?.as_str() {
                    "5" if presented.is_some() => {
                        if let Some(cert) = presented {
                            tls = TlsChoice::Fingerprint(cert.fingerprint);
                        }
                    }
                    "2" => secret = p.secret("Token secret")?,
                    "3" => return Ok(Some((Answers { core, ssh }, tier, tier_chosen))),
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
    use super::{insecure_confirmed, is_no, is_yes};

    #[test]
    fn only_the_word_turns_certificate_checks_off() {
        for yes in ["insecure", " INSECURE ", "Insecure"] {
            assert!(insecure_confirmed(yes), "{yes}");
        }
        for no in [
            "",
            "y",
            "yes",
            "s",
            "sí",
            "stop",
            "insecur",
            "not insecure",
            "off",
        ] {
            assert!(!insecure_confirmed(no), "{no}");
        }
    }

    #[test]
    fn yes_in_english_and_spanish() {
        for y in ["y", "Yes", "s", "si", "Sí", "sí claro"] {
            assert!(is_yes(y), "{y}");
        }
        for n in ["n", "no", "", "x"] {
            assert!(!is_yes(n), "{n}");
        }
        for n in ["n", "No", " NO "] {
            assert!(is_no(n), "{n}");
        }
        for neither in ["", "x", "yes", "maybe", "2"] {
            assert!(!is_no(neither), "{neither}");
        }
    }
}
