//! `loupe token add|list|revoke`: teams' bearer tokens in the data dir, each with its scopes;
//! adding and revoking are recorded in the audit trail (as the host's operator: only root on
//! the host writes the data dir). `loupe audit` reads that trail.

use anyhow::{Context, Result};

use crate::cli::{AuditArgs, TokenCommand};
use loupe_api::{access::Caller, clock::format_unix_ns};
use loupe_core::{audit::AuditLog, tokens};

pub fn main(cmd: TokenCommand) -> Result<()> {
    match cmd {
        TokenCommand::Add { team, scopes, dir } => {
            // The first command of a new host often: the data dir is made its owner's alone here too.
            super::data_dir::make_private(&dir.data_dir)
                .with_context(|| format!("making {} private", dir.data_dir.display()))?;
            let added = tokens::add(&dir.data_dir, &team, scopes);
            let target = match &added {
                Ok((_, r)) => format!("token {} of team '{}': {}", r.id, r.team, r.scopes),
                Err(_) => format!("a token of team '{team}': {scopes}"),
            };
            audit(&dir.data_dir, "token_add", &target, &added);
            let (token, record) = added?;
            eprintln!(
                "token {} for team '{}' with scopes {} (shown once; only its hash is kept):",
                record.id, record.team, record.scopes
            );
            println!("{token}");
        }
        TokenCommand::List { dir, json } => {
            let list = tokens::list(&dir.data_dir)?;
            if json {
                #[derive(serde::Serialize)]
                struct Entry<'a> {
                    id: &'a str,
                    team: &'a str,
                    scopes: loupe_api::access::Scopes,
                    created_unix_ns: u64,
                }
                let out: Vec<Entry> = list
                    .iter()
                    .map(|t| Entry { id: &t.id, team: &t.team, scopes: t.scopes, created_unix_ns: t.created_unix_ns })
                    .collect();
                println!("{}", serde_json::to_string(&out)?);
            } else {
                println!("{:<12}  {:<20}  {:<34}  created (UTC)", "id", "team", "scopes");
                for t in &list {
                    println!(
                        "{:<12}  {:<20}  {:<34}  {}",
                        t.id,
                        t.team,
                        t.scopes.to_string(),
                        format_unix_ns(t.created_unix_ns)
                    );
                }
            }
        }
        TokenCommand::Revoke { id, dir } => {
            let gone = tokens::revoke(&dir.data_dir, &id);
            let target = match &gone {
                Ok(t) => format!("token {} of team '{}'", t.id, t.team),
                Err(_) => format!("token {id}"),
            };
            audit(&dir.data_dir, "token_revoke", &target, &gone);
            let gone = gone?;
            println!("revoked token {} of team '{}'", gone.id, gone.team);
        }
    }
    Ok(())
}

fn audit<T>(data_dir: &std::path::Path, action: &str, target: &str, outcome: &Result<T>) {
    let outcome = match outcome {
        Ok(_) => Ok(()),
        Err(e) => Err(loupe_core::CoreError::Internal(format!("{e:#}"))),
    };
    AuditLog::new(data_dir).record(&Caller::operator(), action, target, &outcome);
}

/// `loupe audit`: the trail's entries in a range, oldest first.
pub fn audit_trail(args: AuditArgs) -> Result<()> {
    let range = loupe_core::time::range(args.range.from, args.range.to)?;
    let read = loupe_core::audit::read(&args.dir.data_dir, range)?;
    if args.json {
        for e in &read.entries {
            println!("{}", serde_json::to_string(e)?);
        }
    } else {
        println!("{:<30}  {:<12}  {:<12}  {:<13}  {:<20}  target", "time (UTC)", "team", "token", "action", "outcome");
        for e in &read.entries {
            // A folded line: that many refusals of one token within a minute, the last one's
            // time and target.
            let outcome = if e.count > 1 { format!("{} ×{}", e.outcome, e.count) } else { e.outcome.clone() };
            println!(
                "{:<30}  {:<12}  {:<12}  {:<13}  {:<20}  {}",
                e.time, e.team, e.token_id, e.action, outcome, e.target
            );
        }
    }
    if read.skipped_lines > 0 {
        eprintln!("loupe: {} lines of the audit log were not entries and were skipped", read.skipped_lines);
    }
    Ok(())
}
