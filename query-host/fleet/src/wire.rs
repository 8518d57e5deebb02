//! What travels on the fleet's subjects: a request [`Envelope`] and a [`Reply`], MessagePack.
//! A request travels signed (`loupe_api::signed::Signed`, its bytes those of the envelope,
//! which names who asks in its [`Claims`]): the asker's signer makes it, each host's gate
//! opens it.
//!
//! Every message comes from another program on another host, so each is decoded with the
//! nesting cap of [`loupe_api::formats::msgpack`] after its size was checked against the server's
//! payload limit, and a reply is checked against that limit *before* it is sent: NATS drops an
//! oversized publish, which the asking side would only see as a missing host at its deadline.
//! An oversized answer is therefore replaced by a small error reply that says so.

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use super::subjects::{Selector, Verb};
use loupe_api::{
    error::CoreError,
    formats::msgpack,
    model::{ErrorKind, FleetAnswered, FleetHost, FleetMiss, FleetPlace},
    signed::Claims,
};

/// Bumped when a message's shape changes; an agent refuses a version it does not speak.
/// 2: requests signed, with claims; an error's kind travels with it.
pub const WIRE_VERSION: u32 = 2;

/// A request's body, and the verb it is sent with: signed inside the request
/// ([`Envelope::verb`]), so a request is refused on another verb's subject.
pub trait Body: Serialize + DeserializeOwned {
    const VERB: Verb;
}

impl Body for InvokeBody {
    const VERB: Verb = Verb::Invoke;
}

impl Body for RunBody {
    const VERB: Verb = Verb::Run;
}

impl Body for ReadBody {
    const VERB: Verb = Verb::Read;
}

impl Body for LeafInvokeBody {
    const VERB: Verb = Verb::Invoke;
}

/// A leaf's registry (no body).
impl Body for () {
    const VERB: Verb = Verb::Hosts;
}

/// A request to every selected host.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope<B> {
    pub v: u32,
    /// What it asks for ([`Body::VERB`] of its body), signed with it: a host refuses it on
    /// another verb's subject.
    pub verb: Verb,
    /// The coordinator's id for this query (in logs on both sides).
    pub query: String,
    /// Unix ns after which the answer is no longer awaited: an agent that receives the request
    /// later (it was partitioned, or queued) drops it rather than work for nobody.
    pub deadline_unix_ns: u64,
    /// Only hosts it matches answer; a host outside it refuses it.
    pub selector: Selector,
    /// Who asks: the team, the scopes, a nonce, the validity (no later than the deadline).
    pub claims: Claims,
    pub body: B,
}

/// `invoke`: run a module next to this host's data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InvokeBody {
    /// The analysis' name (for logs and errors) and the SHA-256 (hex) of its module in the
    /// fleet's object store.
    pub name: String,
    pub sha256: String,
    pub from_unix_ns: u64,
    pub to_unix_ns: u64,
    /// Parameters as JSON values, checked by the host against the module's description.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The JetStream domain whose object store holds the module, when it is not the host's own
    /// (the asker sits on another leaf or on the hub); absent: the host's own domain.
    #[serde(default)]
    pub origin_domain: Option<String>,
    /// The module's catalog entry as it was signed when shipped (`modules::Shipped`): a host
    /// runs the module only if a key with `upload` signed it for this name and hash.
    #[serde(with = "serde_bytes")]
    pub module: Vec<u8>,
}

/// `invoke`'s answer: the partial result, encoded by the analysis runtime.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InvokeReply {
    #[serde(with = "serde_bytes")]
    pub partial: Vec<u8>,
    /// Time the analysis ran on the host, ns.
    pub elapsed_ns: u64,
}

/// `run`: a synchronized run starting at a common instant.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunBody {
    /// The interface; the agent's only one when absent.
    pub iface: Option<String>,
    pub interval_ns: u64,
    pub samples: u32,
    pub start_unix_ns: u64,
}

/// `run`'s answer: the stored run's id and the series the rack view draws.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReply {
    pub run_id: u64,
    pub iface: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub in_bytes: Vec<u64>,
    pub out_bytes: Vec<u64>,
    pub clock: Option<loupe_api::model::ClockView>,
    pub configured_before_start_ns: i64,
}

/// `read`: what one host has stored, for the fleet view's "open this host's window".
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ReadBody {
    /// A stored run, by id.
    Run { id: u64 },
    /// The stack samples of a range, aggregated (the asker builds the flame graph: a tree
    /// would arrive nested as deep as the stacks, past the wire's nesting cap). `kind` says
    /// which: CPU samples (counts), or waits off the CPU (ns waited); absent from an older
    /// asker, it means CPU samples.
    Profile {
        from_unix_ns: u64,
        to_unix_ns: u64,
        #[serde(default)]
        kind: loupe_store::SampleKind,
    },
}

/// `read`'s answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ReadReply {
    Run(loupe_api::model::RunView),
    Profile(loupe_store::Profile),
}

/// `invoke` to a leaf: its coordinator invokes the leaf's selected hosts, waits for them until
/// `leaf_deadline_unix_ns` (before the asker's own deadline, so the leaf's one answer arrives
/// in time), and merges their partials into one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeafInvokeBody {
    pub invoke: InvokeBody,
    pub leaf_deadline_unix_ns: u64,
    /// The request for the leaf's hosts, signed by the asker (an encoded `Signed`, with the
    /// same query id, valid until the leaf's deadline): the leaf's coordinator passes it on as
    /// it is, so it can narrow where the request goes but never widen what it may do.
    #[serde(with = "serde_bytes")]
    pub hosts_request: Vec<u8>,
}

/// A leaf's answer to a tree merge.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeafInvokeReply {
    /// The leaf's hosts' partials merged into one; absent when none of its hosts is selected
    /// or none answered with a result.
    #[serde(with = "serde_bytes")]
    pub partial: Option<Vec<u8>>,
    pub answered: Vec<FleetAnswered>,
    pub missing: Vec<FleetMiss>,
    pub failed: Vec<FleetMiss>,
    /// The leaf's own merge, ns.
    pub merge_ns: u64,
    /// Every host the leaf's registry holds (not only the selected ones): the asker keeps
    /// them, to name them missing should the whole leaf go quiet.
    pub leaf_hosts: Vec<FleetPlace>,
    /// The partial's seal (`seal::LeafSeal`, signed by the leaf coordinator's host key): an
    /// asker with a trust file merges the partial only if a host key of it signed exactly it.
    #[serde(default, with = "serde_bytes")]
    pub seal: Option<Vec<u8>>,
}

/// `hosts` to a leaf: its registry, as one of its agents lists it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LeafHostsReply {
    pub hosts: Vec<FleetHost>,
}

/// Why a host could not answer: the error's kind (as the core's errors carry it: the asker
/// answers with it, never guessing it from the code), a stable code and words for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub code: String,
    pub message: String,
}

impl WireError {
    pub fn new(kind: ErrorKind, code: &str, message: impl Into<String>) -> WireError {
        WireError { kind, code: code.into(), message: message.into() }
    }
}

impl From<CoreError> for WireError {
    fn from(e: CoreError) -> WireError {
        WireError { kind: e.kind(), code: e.code().to_string(), message: e.to_string() }
    }
}

/// One host's answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reply<R> {
    pub v: u32,
    pub query: String,
    pub place: FleetPlace,
    /// The JetStream domain (leaf) of the answering agent's server; absent without one.
    #[serde(default)]
    pub leaf: Option<String>,
    pub result: Result<R, WireError>,
}

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(value).expect("fleet messages are plain data and always encode")
}

/// Decodes a message of at most `limit` bytes (the server's max payload).
pub fn decode<T: DeserializeOwned>(bytes: &[u8], limit: usize) -> Result<T, String> {
    if bytes.len() > limit {
        return Err(format!("message of {} bytes exceeds the {limit}-byte limit", bytes.len()));
    }
    msgpack::from_slice(bytes).map_err(|e| format!("undecodable fleet message: {e}"))
}

/// A reply that fits in `limit` bytes: `reply` encoded, or, if that is larger, an error reply
/// naming both sizes (`too_large`), which always fits.
pub fn encode_reply<R: Serialize>(reply: &Reply<R>, limit: usize) -> Vec<u8> {
    let bytes = encode(reply);
    if bytes.len() <= limit {
        return bytes;
    }
    let refusal: Reply<()> = Reply {
        v: reply.v,
        query: reply.query.clone(),
        place: reply.place.clone(),
        leaf: reply.leaf.clone(),
        result: Err(WireError::new(
            ErrorKind::TooLarge,
            "too_large",
            format!(
                "the answer is {} bytes, over the fleet's {limit}-byte message limit: narrow the range or the \
                 selection, or aggregate more in the analysis' run()",
                bytes.len()
            ),
        )),
    };
    encode(&refusal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> FleetPlace {
        FleetPlace { host: "h1".into(), rack: "r1".into(), dc: "d1".into() }
    }

    #[test]
    fn an_oversized_reply_becomes_a_refusal_that_names_the_sizes() {
        let reply = Reply {
            v: WIRE_VERSION,
            query: "q".into(),
            place: place(),
            leaf: None,
            result: Ok(InvokeReply { partial: vec![7; 10_000], elapsed_ns: 1 }),
        };
        let fits = encode_reply(&reply, 1 << 20);
        let back: Reply<InvokeReply> = decode(&fits, 1 << 20).unwrap();
        assert_eq!(back.result.unwrap().partial.len(), 10_000);
        let refused = encode_reply(&reply, 4_000);
        assert!(refused.len() <= 4_000);
        let back: Reply<InvokeReply> = decode(&refused, 1 << 20).unwrap();
        let err = back.result.unwrap_err();
        assert_eq!((err.kind, err.code.as_str()), (ErrorKind::TooLarge, "too_large"));
        assert!(err.message.contains("4000-byte"), "{}", err.message);
        assert_eq!(back.place, place());
    }

    #[test]
    fn hostile_messages_are_errors() {
        assert!(decode::<Envelope<InvokeBody>>(&[0x91; 100_000], 1 << 20).unwrap_err().contains("undecodable"));
        assert!(decode::<Envelope<InvokeBody>>(&[0; 2_000_000], 1 << 20).unwrap_err().contains("exceeds"));
        assert!(decode::<Envelope<InvokeBody>>(b"\xde\xff\xff", 1 << 20).is_err());
    }
}
