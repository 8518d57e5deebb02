//! `loupe udf upload|list|invoke|delete`: analyses on a server (`--server`, else the local
//! agent's HTTP API), as the host's operations: the token's team uploads, owns and invokes.

use std::fs;

use anyhow::{Context, Result, anyhow};
use serde_json::{Map, Value};

use super::progress;
use crate::{
    cli::{RemoteArgs, UdfCommand},
    render,
};
use loupe_api::{formats::base64::Base64, ops::HostApi};
use loupe_core::time::range;

/// Where `loupe udf …` goes without `--server`: a local agent's default address.
const DEFAULT_SERVER: &str = "http://127.0.0.1:7878";

/// `NAME=VALUE`: numbers stay numbers, `true`/`false` are flags, anything else is text.
pub fn parse_param(text: &str) -> Result<(String, Value)> {
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

pub fn main(cmd: UdfCommand, remote: &RemoteArgs) -> Result<()> {
    let server = remote.server.as_deref().unwrap_or(DEFAULT_SERVER);
    let host = remote.client(server)?.host();
    match cmd {
        UdfCommand::Upload { name, file } => {
            let bytes = fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let spinner = progress::spinner(progress::wanted(false), &format!("uploading and compiling {name}"));
            let uploaded = host.upload_udf(name, Base64(bytes));
            spinner.finish_and_clear();
            println!("{}", serde_json::to_string(&uploaded?)?);
        }
        UdfCommand::List { json } => {
            let list = host.list_udfs()?;
            if json {
                println!("{}", serde_json::to_string(&list)?);
            } else {
                print!("{}", render::analysis::list(&list));
            }
        }
        UdfCommand::Invoke { name, range: r, params, json } => {
            let mut p = Map::new();
            for text in &params {
                let (k, v) = parse_param(text)?;
                p.insert(k, v);
            }
            let answer = host.invoke(name, range(r.from, r.to)?, p)?;
            if json {
                println!("{}", serde_json::to_string(&answer)?);
            } else {
                print!("{}", render::analysis::result(&answer));
            }
        }
        UdfCommand::Delete { name } => {
            host.delete_udf(name.clone())?;
            println!("deleted {name}");
        }
    }
    Ok(())
}
