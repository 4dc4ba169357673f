//! The `baton` binary: parses the command line and hands each subcommand to
//! the crate that owns it (the client subcommands to `cli`, a thin layer
//! over `baton-client`).

mod cli;

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
    /// Verify Baton's guarantees: `pipeline` runs the exactly-once pipeline verifier, `history` judges a recorded history, `data` checks a stopped node's files.
    Check(baton_check::CheckArgs),
    /// Push one JSON payload (or every line of --file, with progress on stderr).
    Push(cli::PushArgs),
    /// Pop messages and print them as JSON lines (--ack: ack each once printed).
    Pop(cli::PopArgs),
    /// Ack one message by its partition id, lease id and transaction id.
    Ack(cli::AckArgs),
    /// List the queues, one JSON line each.
    Queues(cli::ListArgs),
    /// List the consumer groups, one JSON line each.
    Groups(cli::ListArgs),
    /// Follow a queue: long-poll, print and ack until Ctrl-C or --count.
    Tail(cli::TailArgs),
    /// A cluster's members: `status`, `add --id N --raft-addr HOST:PORT`, `remove --id N`.
    Cluster(cli::ClusterArgs),
    /// The PostgreSQL transactional outbox into Baton: `init`, `run`, `status`, `parked`, `release`.
    Relay(baton_relay::RelayArgs),
}

fn main() {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Serve(a) => baton_server::serve(a),
        Command::Bench(a) => baton_bench::run(a),
        Command::Check(a) => baton_check::run(a),
        Command::Push(a) => cli::push(a),
        Command::Pop(a) => cli::pop(a),
        Command::Ack(a) => cli::ack(a),
        Command::Queues(a) => cli::queues(a),
        Command::Groups(a) => cli::groups(a),
        Command::Tail(a) => cli::tail(a),
        Command::Cluster(a) => cli::cluster(a),
        Command::Relay(a) => baton_relay::run(a).map_err(|e| e.to_string()),
    };
    if let Err(e) = res {
        eprintln!("baton: {e}");
        std::process::exit(1);
    }
}
