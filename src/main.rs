//! The `baton` binary: parses the command line and hands each subcommand to
//! the crate that owns it.

use clap::{Parser, Subcommand};

/// mimalloc keeps freed memory for reuse instead of returning it to the OS at
/// once: on this VM a first touch of a fresh page is slow enough that a
/// checkpoint's copy of the state stalled the planner for ~150 ms with glibc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "baton", version, about = "Baton: a durable message broker (Queen-compatible HTTP API)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one node: HTTP API, write-ahead log, state machine.
    Serve(baton_server::ServeArgs),
    /// Benchmark a Baton (or start one with --spawn / --quick): produce, consume, fixed rate, ramp.
    Bench(baton_bench::BenchArgs),
    /// Verify Baton's guarantees: `pipeline` runs the exactly-once pipeline verifier.
    Check(baton_check::CheckArgs),
}

fn main() {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Serve(a) => baton_server::serve(a),
        Command::Bench(a) => baton_bench::run(a),
        Command::Check(a) => baton_check::run(a),
    };
    if let Err(e) = res {
        eprintln!("baton: {e}");
        std::process::exit(1);
    }
}
