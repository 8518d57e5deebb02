//! A leaf's answer to a tree merge, signed by the agent that merged it, and checked by the asker.
//!
//! Forwarding cannot widen what a request may do (each host checks the asker's own signed
//! request), but a leaf's coordinator also answers for its hosts: the merged partial is its
//! work. It signs, with its host key, the query it answers, the SHA-256 of that partial and the
//! hosts it covers ([`LeafSeal`]); an asker that has a trust file (an agent, or `loupe fleet
//! --fleet-trust FILE`) merges a leaf's partial only if a host key of that file (team `*`)
//! signed exactly it, for this query. Anything else on the bus that answers on a leaf's subject
//! — a rogue client in the leaf's queue group, a replayed answer to an older query — has its
//! leaf's hosts named failed, with why, and is left out of the merge.

use serde::{Deserialize, Serialize};

use super::{modules::sha256_hex, wire};
use loupe_api::signed::{
    FleetKey, Signed,
    trust::{TeamGrant, TrustList},
};

/// Largest seal read (a query id, a hash and a leaf's host names).
const MAX_SEAL: usize = 64 << 10;

/// What a leaf's coordinator signs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeafSeal {
    /// The query it answers (the asker's inbox id).
    pub query: String,
    /// The SHA-256 (hex) of the merged partial it sends.
    pub partial_sha256: String,
    /// The hosts whose partials it merged.
    pub hosts: Vec<String>,
}

/// The seal of `partial`, answering `query` for `hosts`, signed with `key`.
pub fn seal(key: &FleetKey, query: &str, partial: &[u8], hosts: Vec<String>) -> Vec<u8> {
    let seal = LeafSeal { query: query.to_string(), partial_sha256: sha256_hex(partial), hosts };
    wire::encode(&Signed::seal(key, wire::encode(&seal)))
}

/// Whether `seal` (a leaf's, as it arrived) signs `partial` for `query` by a host key `trust`
/// lists; the hosts it covers if so, else why not, in words for the asker's answer.
pub fn check(trust: &TrustList, query: &str, seal: Option<&[u8]>, partial: &[u8]) -> Result<Vec<String>, String> {
    let bytes = seal.ok_or("its leaf's coordinator did not sign the partial")?;
    let signed: Signed = wire::decode(bytes, MAX_SEAL).map_err(|e| format!("the partial's seal: {e}"))?;
    let line = signed.verify(trust).map_err(|e| format!("the partial's seal: {e}"))?;
    if line.team != TeamGrant::AnyTeam {
        return Err(format!(
            "the partial was signed by key {:.12}…, which is not a host key (team * in the trust file, line {})",
            line.key, line.line
        ));
    }
    let seal: LeafSeal = wire::decode(&signed.payload, MAX_SEAL).map_err(|e| format!("the partial's seal: {e}"))?;
    if seal.query != query {
        return Err("the partial was signed for another query (a replayed answer)".into());
    }
    if seal.partial_sha256 != sha256_hex(partial) {
        return Err("the partial is not the one its leaf's coordinator signed".into());
    }
    Ok(seal.hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trust list naming `host` as a host key and `ops` as team ops's.
    fn trust(host: &FleetKey, ops: &FleetKey) -> TrustList {
        TrustList::parse(&format!("{} * read,invoke\n{} ops read,invoke\n", host.public_key(), ops.public_key()))
            .unwrap()
    }

    #[test]
    fn only_a_trusted_host_key_s_seal_of_this_partial_for_this_query_passes() {
        let (host, ops, stranger) = (FleetKey::generate(), FleetKey::generate(), FleetKey::generate());
        let list = trust(&host, &ops);
        let partial = b"columns".as_slice();
        let sealed = seal(&host, "q1", partial, vec!["h1".into(), "h2".into()]);
        assert_eq!(check(&list, "q1", Some(&sealed), partial).unwrap(), ["h1", "h2"]);
        let why = |seal: Option<&[u8]>, query: &str, partial: &[u8]| check(&list, query, seal, partial).unwrap_err();
        assert!(why(None, "q1", partial).contains("did not sign"));
        assert!(why(Some(&sealed), "q2", partial).contains("another query"));
        assert!(why(Some(&sealed), "q1", b"columns, changed").contains("not the one"));
        let by_stranger = seal(&stranger, "q1", partial, Vec::new());
        assert!(why(Some(&by_stranger), "q1", partial).contains("not in this host's fleet trust file"));
        let by_operator = seal(&ops, "q1", partial, Vec::new());
        assert!(why(Some(&by_operator), "q1", partial).contains("not a host key"));
        let mut tampered = sealed.clone();
        let at = tampered.len() / 2;
        tampered[at] ^= 1;
        assert!(check(&list, "q1", Some(&tampered), partial).is_err());
        assert!(why(Some(&[0x91; 100]), "q1", partial).contains("seal"));
    }
}
