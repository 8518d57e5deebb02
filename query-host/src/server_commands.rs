//! Commands around the HTTP API: `serve`, `token add|list|revoke`, `udf upload|list|invoke|delete`.

use std::{
    fs,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use anyhow::{Context, Result, anyhow, bail};
use loupe_store::StoreError;
use serde_json::{Map, Value};

use crate::{
    cli::{RemoteArgs, ServeArgs, TokenCommand, UdfCommand},
    client::Client,
    commands::open_store,
    server::{AppState, Server},
    timearg::{format_unix_ns, now_unix_ns},
    tokens,
};

/// Where `loupe udf …` goes without `--server`: a local agent's default address.
const DEFAULT_SERVER: &str = "http://127.0.0.1:7878";

pub fn serve(args: ServeArgs) -> Result<()> {
    let store = open_store(&args.store).map_err(|e| match e.downcast_ref::<StoreError>() {
        Some(StoreError::Locked { .. }) => {
            anyhow!("{e:#}; a running agent holds it and serves its API itself (see `loupe agent --listen`)")
        }
        _ => e,
    })?;
    let options = args.http.options();
    let state = AppState::new(&args.store.data_dir, store.clone(), None, &options)?;
    let server = Server::start(state, &options)?;
    println!("serving {} on http://{}", args.store.data_dir.display(), server.addr);
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(200));
    }
    server.stop()?;
    store.flush()?;
    Ok(())
}

pub fn token(cmd: TokenCommand) -> Result<()> {
    match cmd {
        TokenCommand::Add { team, dir } => {
            let (token, record) = tokens::add(&dir.data_dir, &team)?;
            eprintln!("token {} for team '{}' (shown once; only its hash is kept):", record.id, record.team);
            println!("{token}");
        }
        TokenCommand::List { dir, json } => {
            let list = tokens::list(&dir.data_dir)?;
            if json {
                #[derive(serde::Serialize)]
                struct Entry<'a> {
                    id: &'a str,
                    team: &'a str,
                    created_unix_ns: u64,
                }
                let out: Vec<Entry> = list
                    .iter()
                    .map(|t| Entry { id: &t.id, team: &t.team, created_unix_ns: t.created_unix_ns })
                    .collect();
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!("{:<12}  {:<20}  created (UTC)", "id", "team");
                for t in &list {
                    println!("{:<12}  {:<20}  {}", t.id, t.team, format_unix_ns(t.created_unix_ns));
                }
            }
        }
        TokenCommand::Revoke { id, dir } => {
            let gone = tokens::revoke(&dir.data_dir, &id)?;
            println!("revoked token {} of team '{}'", gone.id, gone.team);
        }
    }
    Ok(())
}

fn client(remote: &RemoteArgs) -> Result<Client> {
    Client::new(remote.server.as_deref().unwrap_or(DEFAULT_SERVER), remote.token.clone())
}

/// `NAME=VALUE`: numbers stay numbers, `true`/`false` are flags, anything else is text.
fn parse_param(text: &str) -> Result<(String, Value)> {
    let (name, value) = text.split_once('=').ok_or_else(|| anyhow!("bad --param '{text}': expected NAME=VALUE"))?;
    let value = match value {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        v => match serde_json::from_str::<serde_json::Number>(v) {
            Ok(n) => Value::Number(n),
            Err(_) => Value::String(v.to_string()),
        },
    };
    Ok((name.trim().to_string(), value))
}

pub fn udf(cmd: UdfCommand, remote: &RemoteArgs) -> Result<()> {
    let client = client(remote)?;
    match cmd {
        UdfCommand::Upload { name, file } => {
            let bytes = fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let meta: Value = client.put_wasm(&format!("/api/v1/udfs/{name}"), &bytes)?;
            println!("{}", serde_json::to_string(&meta)?);
        }
        UdfCommand::List { json } => {
            let list: Vec<Value> = client.get("/api/v1/udfs", &[])?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                println!("{:<24} {:<12} {:<10} {:>9}  {:<10}  summary", "name", "owner", "version", "bytes", "result");
                for u in &list {
                    println!(
                        "{:<24} {:<12} {:<10} {:>9}  {:<10}  {}",
                        u["name"].as_str().unwrap_or(""),
                        u["owner"].as_str().unwrap_or(""),
                        u["version"].as_str().unwrap_or(""),
                        u["size"],
                        u["description"]["result_kind"].as_str().unwrap_or(""),
                        u["description"]["summary"].as_str().unwrap_or("")
                    );
                }
            }
        }
        UdfCommand::Invoke { name, range, params, json } => {
            let mut p = Map::new();
            for text in &params {
                let (k, v) = parse_param(text)?;
                p.insert(k, v);
            }
            let from = range.from.map_or(0, |t| t.unix_ns());
            let to = range.to.map_or_else(now_unix_ns, |t| t.unix_ns());
            if from > to {
                bail!("bad time range: --from {} is after --to {}", format_unix_ns(from), format_unix_ns(to));
            }
            let body = serde_json::json!({ "from": from, "to": to, "params": p });
            let answer: Value = client.post(&format!("/api/v1/udfs/{name}/invoke"), &body)?;
            if json {
                println!("{}", serde_json::to_string(&answer)?);
            } else {
                print!("{}", render(&answer));
            }
        }
        UdfCommand::Delete { name } => {
            client.delete(&format!("/api/v1/udfs/{name}"))?;
            println!("deleted {name}");
        }
    }
    Ok(())
}

/// A result for a terminal: tables as columns, series as their last points, text as is.
fn render(answer: &Value) -> String {
    let mut out = String::new();
    match answer["kind"].as_str() {
        Some("table") => {
            let cols: Vec<&str> = answer["columns"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
            out.push_str(&cols.join("\t"));
            out.push('\n');
            for row in answer["rows"].as_array().into_iter().flatten() {
                let cells: Vec<String> = row
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| match c {
                        Value::String(s) => s.clone(),
                        Value::Null => "-".into(),
                        other => other.to_string(),
                    })
                    .collect();
                out.push_str(&cells.join("\t"));
                out.push('\n');
            }
        }
        Some("series") => {
            for s in answer["series"].as_array().into_iter().flatten() {
                let points = s["points"].as_array().map_or(0, Vec::len);
                out.push_str(&format!("{} ({}): {points} points\n", s["name"].as_str().unwrap_or(""), s["unit"].as_str().unwrap_or("")));
                for p in s["points"].as_array().into_iter().flatten() {
                    out.push_str(&format!("  {}  {}\n", format_unix_ns(p[0].as_u64().unwrap_or(0)), p[1]));
                }
            }
        }
        Some("flamegraph") => {
            let view: Result<crate::profile::ProfileView, _> = serde_json::from_value(answer["profile"].clone());
            match view {
                Ok(v) => out.push_str(&v.summary(25)),
                Err(_) => out.push_str(&answer["profile"].to_string()),
            }
        }
        Some("text") => {
            out.push_str(answer["text"].as_str().unwrap_or(""));
            out.push('\n');
        }
        _ => out.push_str(&format!("{answer}\n")),
    }
    for line in answer["log"].as_array().into_iter().flatten() {
        out.push_str(&format!("log {}: {}\n", line["level"].as_str().unwrap_or(""), line["message"].as_str().unwrap_or("")));
    }
    out
}
