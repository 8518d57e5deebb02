//! Signed fleet requests: who asks travels with what is asked, signed, and every host checks
//! it against the keys it trusts before it does anything.
//!
//! Why: agents publish requests themselves (a leaf's leader gathers its leaf, an agent's HTTP
//! fleet routes ask the fleet), so the bus's own accounts and permissions cannot tell an asker
//! from an agent, and a request that says nothing about who sent it gives every client the bus
//! admits a run or an analysis on every host, as root. A signature over the request's bytes
//! moves the decision to the host that does the work, as a Kubernetes API server decides per
//! request and as NATS's own decentralized model verifies signed claims at the receiver.
//!
//! - [`keys`]: ed25519 key pairs in the nkeys format NATS operators already keep (`U…` public
//!   keys, `SU…` seeds): made, written owner-only and read.
//! - [`trust`]: the trust file — which public keys may ask, for which team, with which scopes.
//! - [`replay`]: the nonces a host has seen, each kept until its request expires.
//!
//! A [`Signed`] message carries the request's bytes exactly as they were signed (a MessagePack
//! encoding of the same value may differ in bytes, so nothing is re-encoded to be checked), the
//! signer's public key and the signature. The request inside names [`Claims`]: the team it acts
//! for, the scopes it asks for, a nonce and its validity. A host opens it in this order, and
//! refuses at the first step that fails: the key is in its trust file; the signature is that
//! key's over these bytes; then, decoded, the claims are within the key's trust line and the
//! clock ([`Claims::check`]); then the nonce is new ([`replay::SeenNonces`]). What a request may
//! reach (host, rack, dc or all) is part of the signed request, so a relay can narrow where it
//! travels but never widen it.

pub mod keys;
pub mod replay;
pub mod trust;

use std::{fmt, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{
    access::{Caller, Scopes, check_team_name},
    formats::hex,
};
pub use keys::FleetKey;
pub use trust::{TeamGrant, TrustLine, TrustList};

/// Longest a signed request may stay valid: a synchronized run may start up to 10 minutes
/// ahead and last a few more, and its request is answered once the run is stored.
pub const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);
/// How far ahead of a host's clock a request may say it was issued (clocks of one fleet agree
/// far better than this; more is a forged or broken clock).
pub const MAX_SKEW: Duration = Duration::from_secs(30);
/// An ed25519 signature's length.
pub const SIGNATURE_BYTES: usize = 64;
/// Longest public key accepted on the wire (an nkeys public key is 56 characters).
pub const MAX_KEY_CHARS: usize = 64;

/// A request as it was signed, with who signed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signed {
    /// The request's encoded bytes, as signed.
    #[serde(with = "serde_bytes")]
    pub payload: Vec<u8>,
    /// The signer's public key (`U…`).
    pub key: String,
    #[serde(with = "serde_bytes")]
    pub sig: Vec<u8>,
}

impl Signed {
    /// `payload` signed with `key`.
    pub fn seal(key: &FleetKey, payload: Vec<u8>) -> Signed {
        let sig = key.sign(&payload);
        Signed { payload, key: key.public_key(), sig }
    }

    /// The trust line of the key that signed it, if that key is trusted and the signature is
    /// its own over the payload. The payload is still to be decoded and its claims checked.
    pub fn verify<'t>(&self, trust: &'t TrustList) -> Result<&'t TrustLine, FleetRefusal> {
        if self.key.len() > MAX_KEY_CHARS {
            return Err(FleetRefusal::Untrusted { key: format!("{}…", clip(&self.key)) });
        }
        let line = trust.get(&self.key).ok_or_else(|| FleetRefusal::Untrusted { key: self.key.clone() })?;
        self.check_signature(line)?;
        Ok(line)
    }

    /// Under `--fleet-insecure`: the line [`TrustLine::any_key`] makes for the key it carries,
    /// if the signature is that key's.
    pub fn verify_any_key(&self) -> Result<TrustLine, FleetRefusal> {
        let line = (self.key.len() <= MAX_KEY_CHARS)
            .then(|| TrustLine::any_key(&self.key))
            .flatten()
            .ok_or_else(|| FleetRefusal::Untrusted { key: clip(&self.key) })?;
        self.check_signature(&line)?;
        Ok(line)
    }

    fn check_signature(&self, line: &TrustLine) -> Result<(), FleetRefusal> {
        if self.sig.len() != SIGNATURE_BYTES || !line.verifies(&self.payload, &self.sig) {
            return Err(FleetRefusal::BadSignature { key: self.key.clone() });
        }
        Ok(())
    }
}

/// A request's nonce: 16 random bytes, written as 32 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nonce(pub [u8; 16]);

impl Nonce {
    pub fn random() -> Nonce {
        Nonce(rand::random())
    }
}

impl fmt::Display for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(&self.0))
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Nonce({self})")
    }
}

impl Serialize for Nonce {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Nonce {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Nonce, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let bytes = (text.len() == 32).then(|| hex::decode(&text)).flatten();
        let bytes: [u8; 16] = bytes
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| serde::de::Error::custom("a nonce is 32 hex digits"))?;
        Ok(Nonce(bytes))
    }
}

/// Who asks, inside a signed request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The team the request acts for: absent, its key's own (the trust line's); named, the
    /// caller's a host key signs for (a caller of that host's HTTP fleet routes). A key of one
    /// team cannot name another.
    pub team: Option<String>,
    /// The scopes it asks for; it is granted those its key's trust line also gives.
    pub scopes: Scopes,
    pub nonce: Nonce,
    /// When it was signed and when it stops being valid (Unix ns, the signer's clock); the
    /// expiry is no later than the request's deadline.
    pub issued_unix_ns: u64,
    pub expires_unix_ns: u64,
}

impl Claims {
    /// New claims for `team` (`None`: the key's own) with `scopes`, valid from now for `valid`.
    pub fn new(team: Option<&str>, scopes: Scopes, valid: Duration) -> Claims {
        let now = crate::clock::now_unix_ns();
        Claims {
            team: team.map(str::to_string),
            scopes,
            nonce: Nonce::random(),
            issued_unix_ns: now,
            expires_unix_ns: now.saturating_add(valid.as_nanos().min(u64::MAX as u128) as u64),
        }
    }

    /// The caller these claims make under `line` at `now`: the claimed team if the line
    /// allows it, with the scopes both the claims and the line give. Refused when expired,
    /// issued in the future or valid for longer than [`MAX_LIFETIME`], or for another team.
    pub fn check(&self, line: &TrustLine, now_unix_ns: u64) -> Result<Caller, FleetRefusal> {
        if self.expires_unix_ns < now_unix_ns {
            return Err(FleetRefusal::Expired { ago: Duration::from_nanos(now_unix_ns - self.expires_unix_ns) });
        }
        if self.issued_unix_ns > now_unix_ns.saturating_add(MAX_SKEW.as_nanos() as u64) {
            return Err(FleetRefusal::FromTheFuture { ahead: Duration::from_nanos(self.issued_unix_ns - now_unix_ns) });
        }
        let lifetime = Duration::from_nanos(self.expires_unix_ns.saturating_sub(self.issued_unix_ns));
        if lifetime > MAX_LIFETIME {
            return Err(FleetRefusal::TooLong { lifetime });
        }
        let team = team_under(line, self.team.as_deref())?;
        Ok(Caller { team, token_id: format!("fleet:{}", line.key), scopes: self.scopes.within(line.scopes) })
    }
}

/// The team something signed under `line` acts for, naming `named` (`None`: the key's own): a
/// key of one team acts for that team only; a host key (`*`) names a valid team. The rule of a
/// request's claims and of a shipped module's catalog entry alike.
pub fn team_under(line: &TrustLine, named: Option<&str>) -> Result<String, FleetRefusal> {
    match (&line.team, named) {
        (TeamGrant::Team(own), None) => Ok(own.clone()),
        (TeamGrant::Team(own), Some(named)) if named == own => Ok(own.clone()),
        (TeamGrant::Team(own), Some(named)) => {
            Err(FleetRefusal::WrongTeam { claimed: clip(named), key_team: own.clone() })
        }
        (TeamGrant::AnyTeam, Some(named)) => {
            check_team_name(named).map_err(|reason| FleetRefusal::BadClaims { reason })?;
            Ok(named.to_string())
        }
        (TeamGrant::AnyTeam, None) => Err(FleetRefusal::BadClaims {
            reason: "a host key (team * in the trust file) names the team it acts for".into(),
        }),
    }
}

/// At most 80 characters of a name from outside, for a message.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

/// Why a host refused a fleet request before running it. Each is recorded in the host's audit
/// trail with the key that signed the request, when there is one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FleetRefusal {
    #[error(
        "the request is not signed: this agent takes fleet requests signed by a key of its trust file \
         (sign with `--fleet-key FILE`; make one with `loupe fleet key new`)"
    )]
    Unsigned,
    #[error("key {key} is not in this host's fleet trust file: add it there (key, team, scopes) to let it ask")]
    Untrusted { key: String },
    #[error(
        "this agent takes no fleet requests: it was started without --fleet-trust FILE (the keys that may ask, \
         with their team and scopes)"
    )]
    NoTrustFile,
    #[error("the signature is not key {key}'s over this request: it was changed on the way or forged")]
    BadSignature { key: String },
    #[error("the request expired {} ago", humantime::format_duration(*ago))]
    Expired { ago: Duration },
    #[error(
        "the request says it was issued {} from now by this host's clock (more than the {} allowed): \
         check both clocks",
        humantime::format_duration(*ahead),
        humantime::format_duration(MAX_SKEW)
    )]
    FromTheFuture { ahead: Duration },
    #[error(
        "the request is valid for {}, longer than the {} a fleet request may be",
        humantime::format_duration(*lifetime),
        humantime::format_duration(MAX_LIFETIME)
    )]
    TooLong { lifetime: Duration },
    #[error("this request was seen before (its nonce is not new): a replay is not run twice")]
    Replayed,
    #[error("this host holds {held} unexpired nonces, its most: it takes new requests as older ones expire")]
    NoncesFull { held: usize },
    #[error("the request acts for team '{claimed}', but its key belongs to team '{key_team}'")]
    WrongTeam { claimed: String, key_team: String },
    #[error("the request's claims are not valid: {reason}")]
    BadClaims { reason: String },
    #[error(
        "the request was signed for {signed}; this host ({host}) is outside it, so it was relayed wider than signed"
    )]
    NotSelected { signed: String, host: String },
    #[error(
        "analysis {name}'s catalog entry is not signed (something else than Loupe wrote it): ship the module \
         again with `loupe fleet invoke {name} --wasm FILE --fleet-key KEY`"
    )]
    ModuleUnsigned { name: String },
    #[error("analysis {name}'s signed catalog entry names another module than the one asked for ({sha256:.12}…)")]
    ModuleMismatch { name: String, sha256: String },
    #[error(
        "analysis {name} was shipped by key {key}, which this host's trust file does not give `upload`: \
         only a key with upload may ship what the fleet runs"
    )]
    ModuleNotUploaded { name: String, key: String },
}

impl FleetRefusal {
    /// Stable code (`fleet_unsigned`, `fleet_untrusted_key`, …).
    pub fn code(&self) -> &'static str {
        match self {
            FleetRefusal::Unsigned => "fleet_unsigned",
            FleetRefusal::Untrusted { .. } => "fleet_untrusted_key",
            FleetRefusal::NoTrustFile => "fleet_no_trust_file",
            FleetRefusal::BadSignature { .. } => "fleet_bad_signature",
            FleetRefusal::Expired { .. } => "fleet_expired",
            FleetRefusal::FromTheFuture { .. } => "fleet_from_the_future",
            FleetRefusal::TooLong { .. } => "fleet_too_long",
            FleetRefusal::Replayed => "fleet_replayed",
            FleetRefusal::NoncesFull { .. } => "fleet_nonces_full",
            FleetRefusal::WrongTeam { .. } => "fleet_wrong_team",
            FleetRefusal::BadClaims { .. } => "fleet_bad_claims",
            FleetRefusal::NotSelected { .. } => "fleet_not_selected",
            FleetRefusal::ModuleUnsigned { .. } => "fleet_module_unsigned",
            FleetRefusal::ModuleMismatch { .. } => "fleet_module_mismatch",
            FleetRefusal::ModuleNotUploaded { .. } => "fleet_module_not_uploaded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;

    const SECOND: u64 = 1_000_000_000;

    fn trusted(key: &FleetKey, team: &str, scopes: &str) -> TrustList {
        TrustList::parse(&format!("{} {team} {scopes}\n", key.public_key())).unwrap()
    }

    #[test]
    fn a_sealed_request_verifies_and_any_changed_byte_does_not() {
        let key = FleetKey::generate();
        let trust = trusted(&key, "ops", "read,run");
        let sealed = Signed::seal(&key, b"run rack r1 at 12:00".to_vec());
        assert_eq!(sealed.verify(&trust).unwrap().team, TeamGrant::Team("ops".into()));
        for i in 0..sealed.payload.len() {
            let mut changed = sealed.clone();
            changed.payload[i] ^= 1;
            assert_eq!(changed.verify(&trust).unwrap_err().code(), "fleet_bad_signature", "byte {i}");
        }
        let mut bad_sig = sealed.clone();
        bad_sig.sig[10] ^= 0x40;
        assert_eq!(bad_sig.verify(&trust).unwrap_err().code(), "fleet_bad_signature");
        let mut short = sealed.clone();
        short.sig.truncate(63);
        assert_eq!(short.verify(&trust).unwrap_err().code(), "fleet_bad_signature");
        // Signed by another key, or claiming a trusted key while signed by another.
        let other = FleetKey::generate();
        let stranger = Signed::seal(&other, sealed.payload.clone());
        assert_eq!(stranger.verify(&trust).unwrap_err().code(), "fleet_untrusted_key");
        let forged = Signed { key: key.public_key(), ..stranger };
        assert_eq!(forged.verify(&trust).unwrap_err().code(), "fleet_bad_signature");
        // --fleet-insecure: any key, as long as it signed the request.
        assert_eq!(Signed::seal(&other, b"x".to_vec()).verify_any_key().unwrap().scopes, Scopes::ALL);
        let mut changed = Signed::seal(&other, b"x".to_vec());
        changed.payload[0] = b'y';
        assert_eq!(changed.verify_any_key().unwrap_err().code(), "fleet_bad_signature");
        let long = Signed { key: "U".repeat(10_000), ..sealed };
        assert_eq!(long.verify_any_key().unwrap_err().code(), "fleet_untrusted_key");
        let e = long.verify(&trust).unwrap_err();
        assert!(e.to_string().len() < 200, "a hostile key is not echoed whole: {e}");
    }

    #[test]
    fn claims_are_checked_against_the_clock_the_team_and_the_line() {
        let key = FleetKey::generate();
        let trust = trusted(&key, "ops", "read,run");
        let line = trust.get(&key.public_key()).unwrap();
        let now = 1_900_000_000 * SECOND;
        let claims = Claims {
            team: None,
            scopes: Scopes::of(&[Scope::Read, Scope::Run, Scope::Probe]),
            nonce: Nonce::random(),
            issued_unix_ns: now - SECOND,
            expires_unix_ns: now + 60 * SECOND,
        };
        let caller = claims.check(line, now).unwrap();
        assert_eq!(caller.team, "ops");
        assert_eq!(caller.scopes, Scopes::of(&[Scope::Read, Scope::Run]), "only what the line also gives");
        assert_eq!(caller.token_id, format!("fleet:{}", key.public_key()));
        let refused = |c: Claims| c.check(line, now).unwrap_err().code();
        assert_eq!(refused(Claims { expires_unix_ns: now - 1, ..claims.clone() }), "fleet_expired");
        assert_eq!(
            refused(Claims { issued_unix_ns: now + 31 * SECOND, expires_unix_ns: now + 90 * SECOND, ..claims.clone() }),
            "fleet_from_the_future"
        );
        assert!(claims.check(line, now - 29 * SECOND).is_ok(), "a clock behind by less than the skew");
        assert_eq!(refused(Claims { expires_unix_ns: now + 3600 * SECOND, ..claims.clone() }), "fleet_too_long");
        assert_eq!(claims.check(line, now).unwrap().team, "ops", "no team named: the key's own");
        let named = Claims { team: Some("ops".into()), ..claims.clone() };
        assert_eq!(named.check(line, now).unwrap().team, "ops");
        assert_eq!(refused(Claims { team: Some("web".into()), ..claims.clone() }), "fleet_wrong_team");
    }

    #[test]
    fn a_host_key_acts_for_any_team_with_no_more_than_its_line_gives() {
        let host = FleetKey::generate();
        let trust = TrustList::parse(&format!("{} * read,invoke\n", host.public_key())).unwrap();
        let line = trust.get(&host.public_key()).unwrap();
        let now = 1_900_000_000 * SECOND;
        let claims = Claims {
            team: Some("web".into()),
            scopes: Scopes::ALL,
            nonce: Nonce::random(),
            issued_unix_ns: now,
            expires_unix_ns: now + 10 * SECOND,
        };
        let caller = claims.check(line, now).unwrap();
        assert_eq!(caller.team, "web");
        assert_eq!(caller.scopes, Scopes::of(&[Scope::Read, Scope::Invoke]), "admin asked, the line's two given");
        assert!(!caller.scopes.allows(Scope::Run));
        let refused = |c: Claims| c.check(line, now).unwrap_err().code();
        assert_eq!(refused(Claims { team: None, ..claims.clone() }), "fleet_bad_claims", "a host key names a team");
        assert_eq!(refused(Claims { team: Some("a b".into()), ..claims.clone() }), "fleet_bad_claims");
    }

    #[test]
    fn a_nonce_is_32_hex_digits_both_ways() {
        let n = Nonce([0xab; 16]);
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(json, format!("\"{}\"", "ab".repeat(16)));
        assert_eq!(serde_json::from_str::<Nonce>(&json).unwrap(), n);
        for bad in ["\"ab\"", "\"zz0000000000000000000000000000zz\"", "7", &format!("\"{}\"", "a".repeat(5000))] {
            assert!(serde_json::from_str::<Nonce>(bad).is_err(), "{bad}");
        }
        assert_ne!(Nonce::random(), Nonce::random());
    }
}
