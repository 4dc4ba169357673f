//! `baton-mutant serve ...`: `baton serve` built with the deliberate bugs of
//! crates/log/src/mutant.rs (`BATON_MUTANT=skip-sync|ack-unfenced`), for
//! checking that the history checker catches them (scripts/test --full).
//! Built only with `--features mutants`; never shipped, never `baton`.

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "baton-mutant", about = "baton serve with deliberate bugs, for testing the checkers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one node, with the bug BATON_MUTANT names.
    Serve(baton_server::ServeArgs),
}

fn main() {
    let Command::Serve(a) = Cli::parse().command;
    if let Err(e) = baton_server::serve(a) {
        eprintln!("baton-mutant: {e}");
        std::process::exit(1);
    }
}
