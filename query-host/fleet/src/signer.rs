//! The asking side's signature: every request leaves signed by who asks (`loupe_api::signed`),
//! valid until its own deadline and no longer.
//!
//! Who that is: the operator's key (`--fleet-key FILE`, its team the one the hosts' trust files
//! give it), or an agent's own host key signing for a caller of its HTTP fleet routes — then
//! the request names that caller's team and scopes, and the hosts grant no more than the host
//! key's trust line. Without a key the CLI signs with a key made for the one command: hosts
//! with a trust file refuse it and say how to sign; hosts run with `--fleet-insecure` take it.

use std::sync::Arc;

use super::{
    subjects::Selector,
    wire::{self, Body, Envelope, WIRE_VERSION},
};
use loupe_api::{
    access::{Caller, LOCAL_TEAM, Scopes},
    clock::now_unix_ns,
    signed::{Claims, FleetKey, Nonce, Signed},
};

/// A request ready to publish: the encoded [`Signed`] message, and the query id its replies
/// carry.
#[derive(Clone, Debug)]
pub struct Sealed {
    pub query: String,
    pub bytes: Vec<u8>,
}

/// Who signs, for whom.
#[derive(Clone)]
pub struct Signer {
    key: Arc<FleetKey>,
    /// `None`: the key's own team.
    team: Option<String>,
    scopes: Scopes,
}

impl Signer {
    /// Signs as `key`, for its own team, asking for every scope (the hosts grant what its trust
    /// line gives).
    pub fn new(key: Arc<FleetKey>) -> Signer {
        Signer { key, team: None, scopes: Scopes::ALL }
    }

    /// A key made for one command, naming the operator's team: what `--fleet-insecure` agents
    /// take and every other agent refuses.
    pub fn one_off() -> Signer {
        Signer { key: Arc::new(FleetKey::generate()), team: Some(LOCAL_TEAM.into()), scopes: Scopes::ALL }
    }

    /// A host key signing for `caller` of its HTTP fleet routes: the caller's team and scopes.
    pub fn acting_for(key: Arc<FleetKey>, caller: &Caller) -> Signer {
        Signer { key, team: Some(caller.team.clone()), scopes: caller.scopes }
    }

    pub fn public_key(&self) -> String {
        self.key.public_key()
    }

    /// The team it names (`None`: its key's own).
    pub fn team(&self) -> Option<&str> {
        self.team.as_deref()
    }

    /// The scopes it asks for.
    pub fn scopes(&self) -> Scopes {
        self.scopes
    }

    /// `payload` signed (a catalog entry: what a host checks before it runs a module).
    pub fn sign(&self, payload: Vec<u8>) -> Signed {
        Signed::seal(&self.key, payload)
    }

    /// `body` for the hosts `selector` names, valid until `deadline_unix_ns`, signed with its
    /// verb and a nonce of its own.
    pub fn seal<B: Body>(&self, query: &str, selector: &Selector, deadline_unix_ns: u64, body: B) -> Sealed {
        let now = now_unix_ns();
        let envelope = Envelope {
            v: WIRE_VERSION,
            verb: B::VERB,
            query: query.to_string(),
            deadline_unix_ns,
            selector: selector.clone(),
            claims: Claims {
                team: self.team.clone(),
                scopes: self.scopes,
                nonce: Nonce::random(),
                issued_unix_ns: now,
                expires_unix_ns: deadline_unix_ns,
            },
            body,
        };
        let signed = Signed::seal(&self.key, wire::encode(&envelope));
        Sealed { query: query.to_string(), bytes: wire::encode(&signed) }
    }
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({}, team {:?}, {})", self.key.public_key(), self.team, self.scopes)
    }
}
