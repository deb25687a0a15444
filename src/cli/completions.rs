//! `completions <shell>`: shell completion scripts generated from the same clap definition the
//! binary parses, so they can never drift from the real flags.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, CliError};

/// Flags of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, powershell or elvish.
    pub shell: Shell,
}

/// Prints the completion script to stdout. The script is rendered in memory first because
/// `clap_complete` panics on a write error; a reader that closed the pipe early (`| head`)
/// ends the command quietly.
pub fn run(args: CompletionsArgs) -> Result<(), CliError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut command,
        env!("CARGO_PKG_NAME"),
        &mut script,
    );
    super::write_stdout(&script)
}
