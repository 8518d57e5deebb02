//! Who may do what: a caller is a team holding a set of [`Scope`]s, and every operation of the
//! list (`ops`) names the one scope it needs. The HTTP API learns the caller from its
//! bearer token; the CLI on the host and the agent's control socket (root's alone) act as the
//! host's [`Caller::operator`], who may do everything.
//!
//! Why scopes and not one token kind: the agent runs as root, and before scopes any team's
//! token could attach uprobes to every process of the host, stop another team's session and
//! start runs. Reading is what most callers need; changing the host is asked for by name.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One thing a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Runs, days, profiles, timelines, probe sessions and results, the analyses' list.
    Read,
    /// Run an analysis next to the data.
    Invoke,
    /// Upload an analysis (replacing or deleting one stays its own team's).
    Upload,
    /// Start an on-demand run (it attaches to an interface).
    Run,
    /// Start and stop function probe sessions (uprobes in any process of the host).
    Probe,
    /// Everything, and acting on other teams' sessions and analyses.
    Admin,
    /// Ask the fleet through this agent (its fleet routes and calls). The agent signs each
    /// request with its own host key for the caller's team and scopes; every target grants
    /// what those scopes and the host key's trust line both allow (`signed`).
    Fleet,
}

impl Scope {
    pub const ALL: [Scope; 7] =
        [Scope::Read, Scope::Invoke, Scope::Upload, Scope::Run, Scope::Probe, Scope::Admin, Scope::Fleet];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Invoke => "invoke",
            Scope::Upload => "upload",
            Scope::Run => "run",
            Scope::Probe => "probe",
            Scope::Admin => "admin",
            Scope::Fleet => "fleet",
        }
    }

    /// The error code of a caller without it (`missing_scope_probe`).
    pub fn missing_code(self) -> &'static str {
        match self {
            Scope::Read => "missing_scope_read",
            Scope::Invoke => "missing_scope_invoke",
            Scope::Upload => "missing_scope_upload",
            Scope::Run => "missing_scope_run",
            Scope::Probe => "missing_scope_probe",
            Scope::Admin => "missing_scope_admin",
            Scope::Fleet => "missing_scope_fleet",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.name() == s)
            .ok_or_else(|| format!("unknown scope '{s}': one of {}", Scopes(u8::MAX)))
    }
}

/// A set of scopes; written as their names, comma-separated (`read,invoke,upload`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scopes(u8);

impl Scopes {
    /// A new token's scopes when none are asked for: reading and the team's own analyses.
    pub const DEFAULT: Scopes = Scopes::of(&[Scope::Read, Scope::Invoke, Scope::Upload]);
    /// What a token made before scopes existed could do, and keeps: everything but `probe`
    /// (new) and `admin`.
    pub const BEFORE_SCOPES: Scopes = Scopes::of(&[Scope::Read, Scope::Invoke, Scope::Upload, Scope::Run]);
    /// Every scope.
    pub const ALL: Scopes = Scopes::of(&Scope::ALL);

    pub const fn of(scopes: &[Scope]) -> Scopes {
        let mut bits = 0u8;
        let mut i = 0;
        while i < scopes.len() {
            bits |= 1 << scopes[i] as u8;
            i += 1;
        }
        Scopes(bits)
    }

    /// Whether it holds `scope`; `admin` holds them all.
    pub fn allows(self, scope: Scope) -> bool {
        self.0 & (scope.bit() | Scope::Admin.bit()) != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.0 & s.bit() != 0)
    }

    /// The scopes both `self` and `grant` allow (`admin` only if both hold it): what a signed
    /// request asking for `self` gets from a trust line giving `grant`.
    pub fn within(self, grant: Scopes) -> Scopes {
        let both: Vec<Scope> = Scope::ALL.into_iter().filter(|&s| self.allows(s) && grant.allows(s)).collect();
        Scopes::of(&both)
    }

    /// `read,invoke` (names, in the order of [`Scope::ALL`]; unknown or repeated names refused).
    pub fn parse(text: &str) -> Result<Scopes, String> {
        let mut bits = 0u8;
        for name in text.split(',').map(str::trim) {
            if name.is_empty() {
                return Err(format!("bad scopes '{text}': name them separated by commas, e.g. read,invoke"));
            }
            bits |= name.parse::<Scope>()?.bit();
        }
        Ok(Scopes(bits))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Scope::name).collect();
        f.write_str(&names.join(","))
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scopes({self})")
    }
}

impl Serialize for Scopes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Scopes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scopes, D::Error> {
        // At most one of each name: a longer list is refused before it is kept.
        let list = Vec::<Scope>::deserialize(d)?;
        if list.len() > Scope::ALL.len() {
            return Err(serde::de::Error::custom("more scopes than there are"));
        }
        Ok(Scopes::of(&list))
    }
}

/// Why a caller may not do something (a `CoreError::Refused`, 403).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "team '{team}' may not do this: it needs the '{scope}' scope (its token has {has}); \
         ask for a token with it: `loupe token add {team} --scopes {has},{scope}`"
    )]
    MissingScope { scope: Scope, team: String, has: Scopes },
    #[error("{what} belongs to team '{owner}'; only that team may change or stop it")]
    NotOwner { what: String, owner: String },
}

impl Refused {
    /// `missing_scope_probe`, `not_owner`.
    pub fn code(&self) -> &'static str {
        match self {
            Refused::MissingScope { scope, .. } => scope.missing_code(),
            Refused::NotOwner { .. } => "not_owner",
        }
    }
}

/// The team a call acts for, and what it may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub team: String,
    /// The token's id (as `loupe token list` shows it), or how the caller came in without one
    /// (`operator`, `no-auth`): the audit trail's "who".
    pub token_id: String,
    pub scopes: Scopes,
}

/// An error unless `team` can name a team: 1 to 64 letters, digits, `-`, `_` or `.` (it is
/// written into the audit trail, `/metrics` labels and key-value keys).
pub fn check_team_name(team: &str) -> Result<(), String> {
    if team.is_empty() || team.len() > 64 || !team.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err(format!("bad team name '{team:.80}': use 1-64 letters, digits, '-', '_' or '.'"));
    }
    Ok(())
}

/// The team of the host's own operator, and of requests without a token on `--no-auth`.
pub const LOCAL_TEAM: &str = "local";

impl Caller {
    /// Root on the host itself — the CLI on a local store, the agent's control socket (which
    /// only root may open): every scope.
    pub fn operator() -> Caller {
        Caller { team: LOCAL_TEAM.into(), token_id: "operator".into(), scopes: Scopes::ALL }
    }

    /// An error unless the caller holds `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), Refused> {
        if self.scopes.allows(scope) {
            Ok(())
        } else {
            Err(Refused::MissingScope { scope, team: self.team.clone(), has: self.scopes })
        }
    }

    /// An error unless the caller may act on something `owner` made: its own team's, or an
    /// admin's (`what`: "probe session 3", for the message).
    pub fn require_owner(&self, what: &str, owner: &str) -> Result<(), Refused> {
        if self.team == owner || self.scopes.allows(Scope::Admin) {
            Ok(())
        } else {
            Err(Refused::NotOwner { what: what.to_string(), owner: owner.to_string() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_print_and_allow() {
        let s = Scopes::parse("probe, read").unwrap();
        assert_eq!(s.to_string(), "read,probe");
        assert!(s.allows(Scope::Read) && s.allows(Scope::Probe) && !s.allows(Scope::Run));
        assert!(Scopes::of(&[Scope::Admin]).allows(Scope::Probe), "admin holds every scope");
        assert!(Scopes::parse("read,root").unwrap_err().contains("unknown scope 'root'"));
        assert!(Scopes::parse("read,,run").is_err());
        assert_eq!(Scopes::DEFAULT.to_string(), "read,invoke,upload");
        let json = serde_json::to_string(&Scopes::BEFORE_SCOPES).unwrap();
        assert_eq!(json, r#"["read","invoke","upload","run"]"#);
        assert_eq!(serde_json::from_str::<Scopes>(&json).unwrap(), Scopes::BEFORE_SCOPES);
        assert!(
            serde_json::from_str::<Scopes>(r#"["read","read","read","read","read","read","read","read"]"#).is_err()
        );
        let asked = Scopes::parse("read,run,probe").unwrap();
        assert_eq!(asked.within(Scopes::parse("read,probe,upload").unwrap()).to_string(), "read,probe");
        assert_eq!(asked.within(Scopes::parse("admin").unwrap()), asked, "an admin line gives what is asked");
        assert_eq!(Scopes::parse("admin").unwrap().within(Scopes::parse("read").unwrap()).to_string(), "read");
        assert_eq!(Scopes::ALL.within(Scopes::ALL), Scopes::ALL);
        assert!(check_team_name("ops.web-1_a").is_ok());
        for bad in ["", "a b", "a/b", &"x".repeat(65)] {
            assert!(check_team_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_caller_without_the_scope_or_the_ownership_is_refused_with_its_name() {
        let reader = Caller { team: "a".into(), token_id: "t".into(), scopes: Scopes::DEFAULT };
        let e = reader.require(Scope::Probe).unwrap_err();
        assert_eq!(e.code(), "missing_scope_probe");
        assert!(e.to_string().contains("--scopes read,invoke,upload,probe"), "{e}");
        assert!(reader.require(Scope::Read).is_ok());
        assert!(reader.require_owner("probe session 3", "a").is_ok());
        let e = reader.require_owner("probe session 3", "b").unwrap_err();
        assert_eq!(e.code(), "not_owner");
        assert!(Caller::operator().require_owner("probe session 3", "b").is_ok());
    }
}
