//! `loupe`: the command line (see `cli`) and the glue that hands each command to the app.

use clap::Parser;
use loupe_doors as doors;
use loupe_query_host::{
    app::{agent, commands, demo_app, fleet, probes, serve, tokens, udf, zero_pages},
    cli::{Cli, Command, ExportCommand, ImportCommand, RunsCommand},
};
use tracing_subscriber::EnvFilter;

/// The system allocator, able to give back the zero pages sled leaves behind (`app::zero_pages`).
#[global_allocator]
static ALLOCATOR: zero_pages::Allocator = zero_pages::Allocator;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,async_nats=warn")))
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or the journal got escape codes around every field.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let remote = &cli.remote;
    let result = match cli.command {
        Command::Agent(args) => agent::main(args),
        Command::Status(args) => commands::status(args, remote),
        Command::Days(args) => commands::days(args, remote),
        Command::Run(args) => commands::run(args, remote),
        Command::Runs(RunsCommand::List(args)) => commands::list(args, remote),
        Command::Runs(RunsCommand::Show(args)) => commands::show(args, remote),
        Command::Runs(RunsCommand::Export(args)) => commands::export(args, remote),
        Command::Import(ImportCommand::Millisampler(args)) => commands::import_millisampler(args, remote),
        Command::Sample(args) => commands::sample(args, remote),
        Command::Profile(args) => commands::profile(args, remote),
        Command::Symbolize(args) => commands::symbolize(args, remote),
        Command::Timeline(cmd) => commands::timeline(cmd, remote),
        Command::Window(args) => commands::window(args, remote),
        Command::Export(ExportCommand::Trace { store, range, output }) => {
            commands::export_trace(&store, range, &output, remote)
        }
        Command::Probe(args) => probes::probe(args, remote),
        Command::Probes(cmd) => probes::probes(cmd, remote),
        Command::Serve(args) => serve::main(args),
        Command::Token(cmd) => tokens::main(cmd),
        Command::Audit(args) => tokens::audit_trail(args),
        Command::Udf(cmd) => udf::main(cmd, remote),
        Command::Fleet(cmd) => fleet::main(cmd, remote),
        Command::DemoApp => demo_app::main(),
        Command::Openapi => {
            serde_json::to_string_pretty(&doors::http::openapi()).map(|doc| println!("{doc}")).map_err(Into::into)
        }
    };
    if let Err(e) = result {
        // One line, naming the problem: scripts read it.
        eprintln!("loupe: error: {e:#}");
        std::process::exit(1);
    }
}
