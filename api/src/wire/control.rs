//! What crosses the control socket: a [`Call`] (one JSON line) and its answer (one JSON line),
//! `{"ok": <the core's value>}` or `{"err": {"kind", "error", "code", "log"}}` — the core's
//! result, serialized as it is, so a full disk during a run reads as `no_space` on both ends.
//! The calls, the server's dispatch ([`answer`]) and the client ([`ControlClient`]) follow from
//! the operation list (`crate::ops`).

use std::time::Duration;

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::{
    error::{CoreError, CoreResult},
    model::{ErrorBody, ErrorKind},
    ops::{FleetApi, FleetOp, HostApi, Op},
};

/// Largest call the server reads (imports carry runs; the CLI sends them in chunks of
/// [`IMPORT_CHUNK`]).
pub const MAX_CALL_BYTES: u64 = 64 << 20;
/// Runs per import call.
pub const IMPORT_CHUNK: usize = 32;
/// Time to send a call or an answer once connected.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to answer a call other than a run (store reads: a whole-day profile takes seconds).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Time a probe session may take to detach, gather its records and be stored once stopped.
pub const PROBE_STOP: Duration = Duration::from_secs(60);
/// Time an on-demand run may take beyond its own length before the agent stops waiting.
pub const RUN_MARGIN: Duration = Duration::from_secs(30);

/// One list's call enum (`$call`), its dispatch (`$answer_as`) and its client, which sends each
/// call with the transport's `$send`.
macro_rules! control_calls {
    ($(#[$call_doc:meta])* $call:ident $ops:ident $api:ident $answer_as:ident $send:ident ;
     $( $(#[$doc:meta])* $name:ident / $op:ident ( $($arg:ident : $ty:ty),* ) -> $answer:ty => $http:expr, $scope:expr; )*) => {
        $(#[$call_doc])*
        #[derive(Debug, Serialize, Deserialize)]
        #[serde(tag = "call", rename_all = "snake_case")]
        pub enum $call { $( $op { $($arg: $ty),* } ),* }

        impl $call {
            /// The operation it calls.
            pub fn op(&self) -> $ops {
                match self { $( $call::$op { .. } => $ops::$op ),* }
            }
        }

        /// `api`'s answer to one call, made into what the door sends by `out` (a line on the
        /// control socket, a response over HTTP).
        pub fn $answer_as<E: Encode>(api: &(impl $api + ?Sized), call: $call, out: E) -> E::Out {
            match call { $( $call::$op { $($arg),* } => out.encode(api.$name($($arg),*)) ),* }
        }

        impl<T: Transport> $api for ControlClient<T> {
            $( fn $name(&self, $($arg: $ty),*) -> CoreResult<$answer> { self.0.$send(&$call::$op { $($arg),* }) } )*
        }
    };
}
crate::ops::host_operations!(control_calls
    /// One call: an operation of [`HostApi`] with its arguments, tagged with the operation's
    /// name (`{"call": "show_run", "id": 7, "per_cpu": false}`).
    Call Op HostApi answer_as call);
crate::ops::fleet_operations!(control_calls
    /// One fleet call: an operation of [`FleetApi`] with its arguments, tagged with its name
    /// (`{"call": "fleet_hosts", "hosts": {"rack": "r1"}}`). Only the HTTP API takes them.
    FleetCall FleetOp FleetApi answer_fleet_as fleet_call);

/// A call of either list, as `POST /api/v1/call` takes it: its tag says which list.
#[derive(Debug)]
pub enum AnyCall {
    Host(Call),
    Fleet(FleetCall),
}

impl<'de> Deserialize<'de> for AnyCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AnyCall, D::Error> {
        use serde::de::Error;
        // Read once as a value (the deserializer's own depth limit holds), then as the call its
        // tag names: an unknown or malformed call keeps the host list's words for it.
        let value = serde_json::Value::deserialize(d)?;
        let tag = value.get("call").and_then(serde_json::Value::as_str).unwrap_or_default();
        if FleetOp::ALL.iter().any(|op| op.name() == tag) {
            FleetCall::deserialize(value).map(AnyCall::Fleet).map_err(D::Error::custom)
        } else {
            Call::deserialize(value).map(AnyCall::Host).map_err(D::Error::custom)
        }
    }
}

/// `api`'s answer to one call, encoded as one line.
pub fn answer(api: &(impl HostApi + ?Sized), call: Call) -> Vec<u8> {
    answer_as(api, call, Line)
}

/// What a door makes of an operation's result.
pub trait Encode {
    type Out;
    fn encode<T: Serialize>(self, r: CoreResult<T>) -> Self::Out;
}

/// One answer line ([`encode`]).
pub struct Line;

impl Encode for Line {
    type Out = Vec<u8>;
    fn encode<T: Serialize>(self, r: CoreResult<T>) -> Vec<u8> {
        encode(r)
    }
}

/// Sends a call and reads its answer (the agent's socket in the control door; `POST
/// /api/v1/call` in the HTTP client).
pub trait Transport {
    fn call<T: DeserializeOwned>(&self, call: &Call) -> CoreResult<T>;

    /// A fleet call: only an agent's HTTP API takes them (it asks the fleet for its caller).
    fn fleet_call<T: DeserializeOwned>(&self, _call: &FleetCall) -> CoreResult<T> {
        Err(CoreError::NotInFleet(
            "the agent's control socket does not ask the fleet: give --nats URL, or --server URL of an agent in it",
        ))
    }
}

/// The host's operations asked over a [`Transport`].
pub struct ControlClient<T>(pub T);

impl Call {
    /// How long the client waits for the answer.
    pub fn timeout(&self) -> Duration {
        match self {
            Call::StartRun { order } => order.duration_from_now() + RUN_MARGIN + IO_TIMEOUT,
            Call::StopProbe { .. } => PROBE_STOP + IO_TIMEOUT,
            _ => CALL_TIMEOUT,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer<T> {
    Ok(T),
    Err {
        kind: ErrorKind,
        #[serde(flatten)]
        body: ErrorBody,
    },
}

impl<T> Answer<T> {
    pub fn from_result(r: CoreResult<T>) -> Self {
        match r {
            Ok(v) => Answer::Ok(v),
            Err(e) => Answer::Err { kind: e.kind(), body: e.body() },
        }
    }

    pub fn into_result(self) -> CoreResult<T> {
        match self {
            Answer::Ok(v) => Ok(v),
            Answer::Err { kind, body } => Err(CoreError::Remote { kind, body }),
        }
    }
}

/// One answer line.
pub fn encode<T: Serialize>(r: CoreResult<T>) -> Vec<u8> {
    let mut line = serde_json::to_vec(&Answer::from_result(r)).unwrap_or_else(|e| {
        let e = CoreError::Internal(format!("encoding the answer: {e}"));
        serde_json::to_vec(&Answer::<()>::from_result(Err(e))).expect("an error encodes")
    });
    line.push(b'\n');
    line
}

/// The path of the HTTP route that takes a [`Call`] and answers as the control socket does.
pub const HTTP_CALL_PATH: &str = "/api/v1/call";

/// One answer line read back.
pub fn decode<T: DeserializeOwned>(line: &[u8]) -> CoreResult<T> {
    crate::formats::deep_json::from_slice::<Answer<T>>(line)
        .map_err(|e| CoreError::Transport(format!("reading the agent's answer: {e}")))?
        .into_result()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_of_either_list_is_read_as_the_call_its_tag_names() {
        let host: AnyCall = serde_json::from_str(r#"{"call": "show_run", "id": 7, "per_cpu": false}"#).unwrap();
        assert!(matches!(host, AnyCall::Host(Call::ShowRun { id: 7, per_cpu: false })), "{host:?}");
        let fleet: AnyCall = serde_json::from_str(r#"{"call": "fleet_hosts", "hosts": {"rack": "r1"}}"#).unwrap();
        match fleet {
            AnyCall::Fleet(FleetCall::FleetHosts { hosts }) => assert_eq!(hosts.rack.as_deref(), Some("r1")),
            other => panic!("{other:?}"),
        }
        let e = serde_json::from_str::<AnyCall>(r#"{"call": "fleet_run", "order": {}}"#).unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
        let e = serde_json::from_str::<AnyCall>(r#"{"call": "rm_rf"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant"), "{e}");
    }

    #[test]
    fn errors_keep_their_kind_and_code_across_the_socket() {
        let e = CoreError::Analysis(crate::error::UdfError::NoSpace("storing a run".into()));
        let back = decode::<u64>(&encode::<u64>(Err(e))).unwrap_err();
        assert_eq!((back.kind(), back.code()), (ErrorKind::NoSpace, "no_space"));
        assert!(back.to_string().contains("storing a run"), "{back}");
        let back = decode::<u64>(&encode::<u64>(Err(CoreError::NoRun(9)))).unwrap_err();
        assert_eq!(
            (back.kind(), back.code(), back.to_string().as_str()),
            (ErrorKind::NotFound, "not_found", "no run with id 9")
        );
        assert_eq!(decode::<u64>(&encode(Ok(7u64))).unwrap(), 7);
        assert!(matches!(decode::<u64>(b"{\"ok\": \"seven\"}\n"), Err(CoreError::Transport(_))));
    }
}
