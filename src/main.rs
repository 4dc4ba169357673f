//! The `baton` binary: parses the command line and hands over to the server crate.

use clap::Parser;

fn main() {
    let cli = baton_server::Cli::parse();
    if let Err(e) = baton_server::run(cli) {
        eprintln!("baton: {e}");
        std::process::exit(1);
    }
}
