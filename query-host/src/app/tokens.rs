//! `loupe token add|list|revoke`: teams' bearer tokens in the data dir.

use anyhow::Result;

use crate::cli::TokenCommand;
use loupe_api::clock::format_unix_ns;
use loupe_core::tokens;

pub fn main(cmd: TokenCommand) -> Result<()> {
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
