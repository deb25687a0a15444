//! `man` (hidden): the manual page, roff generated from the same clap definition the binary
//! parses, so the page shipped in the `.deb` (`scripts/build-deb`) can never drift from the
//! real commands and flags.

use clap::CommandFactory;

use super::{Cli, CliError};

/// Prints `nandi-proxmox-mcp(1)` as roff to stdout: the top-level page, then one section per
/// subcommand with its own about text and flags.
pub fn run() -> Result<(), CliError> {
    let mut page = Vec::new();
    render(&mut page).map_err(|e| CliError::Runtime(format!("cannot render the man page: {e}")))?;
    super::write_stdout(&page)
}

/// Renders the page into `out`.
fn render(out: &mut Vec<u8>) -> std::io::Result<()> {
    let command = Cli::command().name(env!("CARGO_PKG_NAME"));
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    out.extend_from_slice(b".SH COMMANDS\n");
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.extend_from_slice(format!(".SS {}\n", roff_escape(sub.get_name())).as_bytes());
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            out.extend_from_slice(format!("{}\n", roff_escape(&about.to_string())).as_bytes());
        }
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            let name = match (arg.get_short(), arg.get_long()) {
                (Some(s), Some(l)) => format!("\\-{s}, \\-\\-{l}"),
                (None, Some(l)) => format!("\\-\\-{l}"),
                (Some(s), None) => format!("\\-{s}"),
                (None, None) => format!("<{}>", arg.get_id()),
            };
            out.extend_from_slice(format!(".TP\n\\fB{}\\fR\n", roff_escape(&name)).as_bytes());
            if let Some(help) = arg.get_help() {
                out.extend_from_slice(format!("{}\n", roff_escape(&help.to_string())).as_bytes());
            }
        }
    }
    man.render_version_section(out)?;
    man.render_authors_section(out)?;
    out.extend_from_slice(
        b".SH FILES\n.TP\n/etc/nandi-proxmox-mcp/env\nThe environment of the packaged systemd unit (the Proxmox token, MCP_TRANSPORT=http, ...).\n.TP\n/usr/share/doc/nandi-proxmox-mcp/\nREADME, CHANGELOG and the guides.\n.SH SEE ALSO\n\\fBsystemctl\\fR(1), \\fBsystemd.exec\\fR(5)\n",
    );
    Ok(())
}

/// Escapes text for roff: backslashes, and a leading `.` or `'` that would read as a request.
fn roff_escape(text: &str) -> String {
    text.replace('\\', "\\e")
        .lines()
        .map(|line| {
            if line.starts_with('.') || line.starts_with('\'') {
                format!("\\&{line}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_every_visible_command() {
        let mut page = Vec::new();
        render(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.starts_with(".ie") || page.contains(".TH nandi-proxmox-mcp"));
        for sub in Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
        {
            assert!(
                page.contains(&format!(".SS {}", sub.get_name())),
                "{}",
                sub.get_name()
            );
        }
        assert!(!page.contains(".SS man\n"), "the man command is hidden");
    }

    #[test]
    fn roff_requests_in_text_are_escaped() {
        assert_eq!(roff_escape(".x\n'y\na\\b"), "\\&.x\n\\&'y\na\\eb");
    }
}
