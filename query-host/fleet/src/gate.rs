//! The host's side of a signed request: every fleet request an agent receives passes this gate
//! before anything runs — the signature is a trusted key's, the claims hold (team, clock), the
//! hosts it was signed for include this one, its nonce is new — and comes out as the
//! [`Caller`] it acts for, which the agent then hands to the core's `ActingFor`: the scope
//! checks and the audit trail are the ones the HTTP API and the control socket use.
//!
//! A refusal names why (`loupe_api::signed::FleetRefusal`) and is recorded in the host's audit
//! trail with the key that signed the request and the team it claimed. Recording is bounded:
//! past [`REFUSALS_PER_SECOND`] a second (a client flooding the bus with junk), refusals are
//! counted and written as one entry saying how many, so the trail keeps what came before — and
//! are not answered, so junk sent to every host does not make every host send.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::Deserialize;

use super::{
    modules::CatalogEntry,
    subjects::{self, Verb},
    wire::{self, Body, Envelope, WIRE_VERSION},
};
use loupe_api::{
    access::{Caller, Scope, Scopes},
    clock::now_unix_ns,
    model::FleetPlace,
    signed::{
        Claims, FleetRefusal, Signed, TrustLine,
        replay::SeenNonces,
        team_under,
        trust::{Reloaded, TrustFile, TrustList},
    },
};

/// Largest signed catalog entry read.
const MAX_ENTRY: usize = 64 << 10;
use loupe_core::audit::AuditLog;

/// Refusals written to the audit trail one by one each second; more are summed into one entry.
pub const REFUSALS_PER_SECOND: u32 = 20;

/// Which keys a host takes requests from.
pub enum Trust {
    /// The keys of a trust file (`--fleet-trust`), re-read when it changes.
    File(Arc<TrustFile>),
    /// Any key that signed the request it carries (`--fleet-insecure`: demos, loopback tests).
    Insecure,
    /// No key (an agent given neither): it joins and lists itself, and refuses every request.
    Nobody,
}

impl Trust {
    /// `trust_file`, `insecure` or `none`, as `/api/v1/health` says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Trust::File(_) => "trust_file",
            Trust::Insecure => "insecure",
            Trust::Nobody => "none",
        }
    }
}

/// A request that passed the gate.
#[derive(Debug)]
pub struct Opened<B> {
    pub envelope: Envelope<B>,
    /// Who it acts for: the team, `fleet:<key>`, the scopes the claims and the key's line both give.
    pub caller: Caller,
}

/// A request the gate refused: why, and what is known of it for the reply and the audit trail.
#[derive(Debug)]
pub struct Refused {
    pub refusal: FleetRefusal,
    /// Its query id, when it could be read (the asker matches replies by it).
    pub query: String,
    /// The key that signed it and the team it claimed (`?` where unknown), no scopes.
    pub who: Caller,
}

/// What a request says about itself before it is trusted: read only to answer and audit a
/// refusal (bounded like every fleet message, never acted on).
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    query: String,
    #[serde(default)]
    claims: Option<Claims>,
}

/// The gate of one agent.
pub struct Gate {
    trust: Trust,
    place: FleetPlace,
    nonces: Mutex<SeenNonces>,
    budget: Mutex<RefusalBudget>,
}

impl Gate {
    pub fn new(trust: Trust, place: FleetPlace) -> Gate {
        Gate { trust, place, nonces: Mutex::new(SeenNonces::default()), budget: Mutex::new(RefusalBudget::default()) }
    }

    pub fn insecure(&self) -> bool {
        matches!(self.trust, Trust::Insecure)
    }

    /// `trust_file`, `insecure` or `none`, as `/api/v1/health` says it.
    pub fn trust_kind(&self) -> &'static str {
        self.trust.kind()
    }

    /// Opens a request that arrived on `subject`. `Ok(None)`: not for this host and not
    /// relayed wider than signed (a rack of the same name in another datacenter), dropped.
    pub fn open<B: Body>(&self, payload: &[u8], limit: usize, subject: &str) -> Result<Option<Opened<B>>, Refused> {
        let now = now_unix_ns();
        let unsigned = || Refused { refusal: FleetRefusal::Unsigned, query: String::new(), who: who(None, None) };
        let signed: Signed = wire::decode(payload, limit).map_err(|_| unsigned())?;
        let refused = |refusal: FleetRefusal| {
            // What the request says of itself, untrusted: for the reply and the audit trail only.
            let head: Option<Head> = wire::decode(&signed.payload, limit).ok();
            Refused {
                refusal,
                query: head.as_ref().map(|h| h.query.chars().take(128).collect()).unwrap_or_default(),
                who: who(Some(&signed.key), head.as_ref().and_then(|h| h.claims.as_ref())),
            }
        };
        let caller_of = |line: &TrustLine| -> Result<(Envelope<B>, Caller), FleetRefusal> {
            let envelope: Envelope<B> = wire::decode(&signed.payload, limit)
                .map_err(|e| FleetRefusal::BadClaims { reason: format!("the request does not decode: {e}") })?;
            if envelope.v != WIRE_VERSION {
                return Err(FleetRefusal::BadClaims {
                    reason: format!("this agent speaks fleet wire version {WIRE_VERSION}, the request {}", envelope.v),
                });
            }
            if envelope.verb != B::VERB {
                return Err(FleetRefusal::BadClaims {
                    reason: format!("it was signed to {} and sent to {}", envelope.verb.as_str(), B::VERB.as_str()),
                });
            }
            let caller = envelope.claims.check(line, now)?;
            Ok((envelope, caller))
        };
        let (envelope, caller) = self.with_line(&signed, caller_of).map_err(refused)?;
        if envelope.claims.expires_unix_ns > envelope.deadline_unix_ns {
            return Err(refused(FleetRefusal::BadClaims { reason: "it expires after its own deadline".into() }));
        }
        // A leaf-level request selects the leaf's hosts for its coordinator, not this host.
        let for_leaf = subjects::route_of(subject).is_some_and(|(_, leaf)| leaf);
        let me = &self.place;
        if !for_leaf && !envelope.selector.matches(&me.host, &me.rack, &me.dc) {
            let verb = subjects::route_of(subject).map(|(v, _)| v).unwrap_or(Verb::Read);
            let its_own =
                subject == subjects::subject(verb, &envelope.selector) || subjects::is_domain_subject(subject);
            if its_own {
                return Ok(None);
            }
            return Err(refused(FleetRefusal::NotSelected {
                signed: envelope.selector.describe(),
                host: format!("{} in rack {}, dc {}", me.host, me.rack, me.dc),
            }));
        }
        let taken = self.nonces.lock().unwrap_or_else(|p| p.into_inner()).take(
            envelope.claims.nonce,
            envelope.claims.expires_unix_ns,
            now,
        );
        taken.map_err(refused)?;
        Ok(Some(Opened { envelope, caller }))
    }

    /// `f` with the trust line of the key that signed `signed`, once the signature is checked:
    /// its trust file's line, a line made for the key under `--fleet-insecure`, none without
    /// either.
    fn with_line<T>(
        &self,
        signed: &Signed,
        f: impl FnOnce(&TrustLine) -> Result<T, FleetRefusal>,
    ) -> Result<T, FleetRefusal> {
        match &self.trust {
            Trust::Insecure => f(&signed.verify_any_key()?),
            Trust::Nobody => Err(FleetRefusal::NoTrustFile),
            Trust::File(file) => f(signed.verify(&trusted_now(file))?),
        }
    }

    /// Whether module `sha256` may run as analysis `name` on this host: its catalog entry
    /// (`module`, as it was signed when shipped) is signed by a key this host trusts, names this
    /// analysis and this hash, and was shipped with `upload` — the entry's scopes within the key's
    /// line, for the team the line allows.
    pub fn check_module(&self, module: &[u8], name: &str, sha256: &str) -> Result<(), FleetRefusal> {
        let unsigned = || FleetRefusal::ModuleUnsigned { name: name.chars().take(64).collect() };
        let signed: Signed = wire::decode(module, MAX_ENTRY).map_err(|_| unsigned())?;
        self.with_line(&signed, |line| {
            let entry: CatalogEntry = wire::decode(&signed.payload, MAX_ENTRY).map_err(|_| unsigned())?;
            if entry.name != name || entry.sha256 != sha256 {
                return Err(FleetRefusal::ModuleMismatch { name: entry.name, sha256: sha256.to_string() });
            }
            team_under(line, entry.team.as_deref())?;
            if !entry.scopes.within(line.scopes).allows(Scope::Upload) {
                return Err(FleetRefusal::ModuleNotUploaded { name: entry.name, key: line.key.clone() });
            }
            Ok(())
        })
    }

    /// Records a refusal in `audit` as `action` (within the second's budget, else counted);
    /// whether it was recorded (the caller logs it then).
    pub fn audit_refusal(&self, audit: &AuditLog, action: &str, subject: &str, refused: &Refused) -> bool {
        let mut budget = self.budget.lock().unwrap_or_else(|p| p.into_inner());
        match budget.spend(Instant::now()) {
            Spend::Record { suppressed } => {
                if suppressed > 0 {
                    audit.record_outcome(
                        &who(None, None),
                        "fleet_refusals",
                        &format!("{suppressed} more fleet requests refused, over {REFUSALS_PER_SECOND} a second"),
                        "fleet_refused",
                    );
                }
                let target = format!("{subject}: {}", refused.refusal);
                audit.record_outcome(&refused.who, action, &target, refused.refusal.code());
                true
            }
            Spend::Suppress => false,
        }
    }
}

/// Who a refused request says it is, for the audit trail: `fleet:<key>` (or `unsigned`) and
/// the team it claimed (`?` where unknown).
fn who(key: Option<&str>, claims: Option<&Claims>) -> Caller {
    let clip = |s: &str| s.chars().take(64).collect::<String>();
    Caller {
        team: claims.and_then(|c| c.team.as_deref()).map(clip).unwrap_or_else(|| "?".into()),
        token_id: key.map(|k| format!("fleet:{}", clip(k))).unwrap_or_else(|| "unsigned".into()),
        scopes: Scopes::of(&[]),
    }
}

/// Refusals recorded one by one per second, and how many were not.
#[derive(Default)]
struct RefusalBudget {
    second: Option<Instant>,
    used: u32,
    suppressed: u64,
}

enum Spend {
    /// Record it, after an entry for the `suppressed` ones before it if any.
    Record {
        suppressed: u64,
    },
    Suppress,
}

impl RefusalBudget {
    fn spend(&mut self, now: Instant) -> Spend {
        if self.second.is_none_or(|s| now.duration_since(s) >= Duration::from_secs(1)) {
            self.second = Some(now);
            self.used = 0;
        }
        if self.used >= REFUSALS_PER_SECOND {
            self.suppressed += 1;
            return Spend::Suppress;
        }
        self.used += 1;
        Spend::Record { suppressed: std::mem::take(&mut self.suppressed) }
    }
}

/// The keys `file` trusts now, read again if it changed; what changed is logged here, once,
/// whichever reader (a host's gate, its asking side) looked first.
pub fn trusted_now(file: &TrustFile) -> Arc<TrustList> {
    let (list, news) = file.current();
    match news {
        Some(Reloaded::Read { keys }) => tracing::info!(keys, "fleet trust file {} read again", file.path().display()),
        Some(Reloaded::Kept { problem }) => tracing::warn!("{problem}; the keys read before stay trusted"),
        None => {}
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{signer::Signer, subjects::Selector};
    use loupe_api::{access::Scope, signed::FleetKey};
    use loupe_store::TimeRange;

    const LIMIT: usize = 1 << 20;

    /// The tests' bodies: a run's, and a read's.
    impl Body for u32 {
        const VERB: Verb = Verb::Run;
    }

    impl Body for u64 {
        const VERB: Verb = Verb::Read;
    }

    fn place(host: &str, rack: &str) -> FleetPlace {
        FleetPlace { host: host.into(), rack: rack.into(), dc: "d1".into() }
    }

    /// A gate of host `h1` in rack `r1` trusting `ops` (read, run) and a host key (read, invoke),
    /// and the signers of both.
    fn trusted() -> (Gate, Signer, Arc<FleetKey>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let (ops, host) = (Arc::new(FleetKey::generate()), Arc::new(FleetKey::generate()));
        let path = dir.path().join("trust");
        let text = format!("{} ops read,run\n{} * read,invoke\n", ops.public_key(), host.public_key());
        std::fs::write(&path, text).unwrap();
        let trust = Trust::File(Arc::new(TrustFile::open(&path).unwrap()));
        (Gate::new(trust, place("h1", "r1")), Signer::new(ops), host, dir)
    }

    fn rack(r: &str) -> Selector {
        Selector { rack: Some(r.into()), ..Default::default() }
    }

    fn in_a_minute() -> u64 {
        now_unix_ns() + 60_000_000_000
    }

    fn refused(gate: &Gate, bytes: &[u8], subject: &str) -> Refused {
        gate.open::<u32>(bytes, LIMIT, subject).unwrap_err()
    }

    #[test]
    fn a_signed_request_opens_as_its_caller_once() {
        let (gate, ops, _, _dir) = trusted();
        let sealed = ops.seal("q1", &rack("r1"), in_a_minute(), 7u32);
        let opened = gate.open::<u32>(&sealed.bytes, LIMIT, "loupe.v1.run.rack.r1").unwrap().unwrap();
        assert_eq!((opened.envelope.body, opened.envelope.query.as_str()), (7, "q1"));
        assert_eq!(opened.caller.team, "ops");
        assert!(opened.caller.scopes.allows(Scope::Run) && !opened.caller.scopes.allows(Scope::Invoke));
        assert_eq!(opened.caller.token_id, format!("fleet:{}", ops.public_key()));
        // The same bytes again: a replay.
        let again = refused(&gate, &sealed.bytes, "loupe.v1.run.rack.r1");
        assert_eq!((again.refusal.code(), again.query.as_str()), ("fleet_replayed", "q1"));
        assert_eq!(again.who.team, "?", "the claims name no team: the key's own is in the trust line");
    }

    #[test]
    fn each_way_a_request_can_be_wrong_is_refused_by_name() {
        let (gate, ops, host_key, _dir) = trusted();
        let subject = "loupe.v1.run.rack.r1";
        // Not signed at all: a hand-built request, as a plain NATS client would send it.
        let plain = wire::encode(&serde_json::json!({"v": 2, "query": "x", "body": {"samples": 10}}));
        let e = refused(&gate, &plain, subject);
        assert_eq!((e.refusal.code(), e.who.token_id.as_str()), ("fleet_unsigned", "unsigned"));
        // Signed by a key nobody trusts.
        let stranger = Signer::new(Arc::new(FleetKey::generate()));
        let e = refused(&gate, &stranger.seal("q", &rack("r1"), in_a_minute(), 1u32).bytes, subject);
        assert_eq!(e.refusal.code(), "fleet_untrusted_key");
        assert_eq!(e.who.token_id, format!("fleet:{}", stranger.public_key()));
        // A trusted key's request with one byte changed.
        let mut sealed = ops.seal("q", &rack("r1"), in_a_minute(), 1u32).bytes;
        let at = sealed.len() - 1;
        sealed[at] ^= 1;
        assert_eq!(refused(&gate, &sealed, subject).refusal.code(), "fleet_bad_signature");
        // Expired.
        let old = ops.seal("q", &rack("r1"), now_unix_ns() - 1_000_000_000, 1u32);
        assert_eq!(refused(&gate, &old.bytes, subject).refusal.code(), "fleet_expired");
        // Signed for rack r2, relayed to r1's subject (or to every host): refused, not dropped.
        let r2 = ops.seal("q", &rack("r2"), in_a_minute(), 1u32);
        let e = refused(&gate, &r2.bytes, subject);
        assert_eq!(e.refusal.code(), "fleet_not_selected");
        assert!(e.refusal.to_string().contains("rack r2"), "{}", e.refusal);
        let r2 = ops.seal("q", &rack("r2"), in_a_minute(), 1u32);
        assert_eq!(refused(&gate, &r2.bytes, "loupe.v1.run.all").refusal.code(), "fleet_not_selected");
        // On its own subject, a rack of the same name in another datacenter: not ours, dropped.
        let other_dc = Selector { rack: Some("r1".into()), dc: Some("d2".into()), host: None };
        let sealed = ops.seal("q", &other_dc, in_a_minute(), 1u32);
        assert!(gate.open::<u32>(&sealed.bytes, LIMIT, subject).unwrap().is_none());
        // A host key names the team it acts for, and gets no more than its line.
        let caller = Caller { team: "web".into(), token_id: "t".into(), scopes: Scopes::ALL };
        let for_web = Signer::acting_for(Arc::clone(&host_key), &caller).seal("q", &rack("r1"), in_a_minute(), 1u32);
        let opened = gate.open::<u32>(&for_web.bytes, LIMIT, subject).unwrap().unwrap();
        assert_eq!(opened.caller.team, "web");
        assert_eq!(opened.caller.scopes, Scopes::of(&[Scope::Read, Scope::Invoke]));
        // Signed to run, sent to read (a body that decodes as the other's): refused by its verb.
        let run = ops.seal("q", &rack("r1"), in_a_minute(), 1u32);
        let e = gate.open::<u64>(&run.bytes, LIMIT, "loupe.v1.read.rack.r1").unwrap_err();
        assert_eq!(e.refusal.code(), "fleet_bad_claims");
        assert!(e.refusal.to_string().contains("signed to run and sent to read"), "{}", e.refusal);
        // Nothing but signed bytes of the right shape decodes; junk is "unsigned".
        assert_eq!(refused(&gate, &[0x91; 1000], subject).refusal.code(), "fleet_unsigned");
    }

    #[test]
    fn an_agent_without_a_trust_file_refuses_everyone_and_an_insecure_one_takes_any_key() {
        let nobody = Gate::new(Trust::Nobody, place("h1", "r1"));
        let anyone = Gate::new(Trust::Insecure, place("h1", "r1"));
        let sealed = Signer::one_off().seal("q", &Selector::default(), in_a_minute(), 1u32);
        let e = refused(&nobody, &sealed.bytes, "loupe.v1.run.all");
        assert_eq!(e.refusal.code(), "fleet_no_trust_file");
        assert!(e.refusal.to_string().contains("--fleet-trust"), "{}", e.refusal);
        let opened = anyone.open::<u32>(&sealed.bytes, LIMIT, "loupe.v1.run.all").unwrap().unwrap();
        assert_eq!((opened.caller.team.as_str(), opened.caller.scopes), ("local", Scopes::ALL));
        assert!(anyone.insecure() && !nobody.insecure());
    }

    #[test]
    fn a_nonce_is_not_taken_by_a_request_that_was_refused() {
        // A request refused for its claims does not burn its nonce: the same signed bytes are
        // refused for the same reason again, not as a replay.
        let (gate, ops, _, _dir) = trusted();
        let r2 = ops.seal("q", &rack("r2"), in_a_minute(), 1u32);
        for _ in 0..2 {
            assert_eq!(refused(&gate, &r2.bytes, "loupe.v1.run.all").refusal.code(), "fleet_not_selected");
        }
    }

    #[test]
    fn refusals_are_audited_with_the_key_and_the_claimed_team_within_a_budget() {
        let dir = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(dir.path());
        let (gate, _, _, _keys) = trusted();
        let caller = Caller { team: "web".into(), token_id: "t".into(), scopes: Scopes::ALL };
        let stranger = Arc::new(FleetKey::generate());
        let sealed = Signer::acting_for(Arc::clone(&stranger), &caller).seal("q", &rack("r1"), in_a_minute(), 1u32);
        let e = refused(&gate, &sealed.bytes, "loupe.v1.run.rack.r1");
        assert!(gate.audit_refusal(&audit, "start_run", "loupe.v1.run.rack.r1", &e));
        for _ in 0..(REFUSALS_PER_SECOND + 30) {
            gate.audit_refusal(&audit, "start_run", "loupe.v1.run.all", &refused(&gate, b"junk", "loupe.v1.run.all"));
        }
        // The trail folds the same refusals of one caller by the minute: counted, not lost.
        audit.flush();
        let entries = loupe_core::audit::read(dir.path(), TimeRange::ALL).unwrap().entries;
        let first = &entries[0];
        assert_eq!((first.team.as_str(), first.action.as_str()), ("web", "start_run"));
        assert_eq!(first.token_id, format!("fleet:{}", stranger.public_key()));
        assert_eq!(first.outcome, "fleet_untrusted_key");
        assert!(first.target.starts_with("loupe.v1.run.rack.r1: key U"), "{}", first.target);
        let recorded: u64 = entries.iter().map(|e| e.count).sum();
        assert_eq!(recorded, u64::from(REFUSALS_PER_SECOND), "one second's budget, the rest counted");
        assert!(entries.len() <= 5, "the unsigned ones folded: {entries:?}");
        assert!(entries[1..].iter().all(|e| e.outcome == "fleet_unsigned" && e.token_id == "unsigned"));
    }

    #[test]
    fn refusals_past_the_budget_are_counted_into_one_entry() {
        let mut budget = RefusalBudget::default();
        let t0 = Instant::now();
        for _ in 0..REFUSALS_PER_SECOND {
            assert!(matches!(budget.spend(t0), Spend::Record { suppressed: 0 }));
        }
        for _ in 0..500 {
            assert!(matches!(budget.spend(t0 + Duration::from_millis(500)), Spend::Suppress));
        }
        assert!(matches!(budget.spend(t0 + Duration::from_secs(1)), Spend::Record { suppressed: 500 }));
        assert!(matches!(budget.spend(t0 + Duration::from_secs(1)), Spend::Record { suppressed: 0 }));
    }
}
