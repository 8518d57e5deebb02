//! The `fleet-analysis` world (an analysis that also exports `merge`): its bindings, and whether
//! a compiled component has that entry point ([`merge_pre`], asked once at compile time by
//! the runtime). Calling it is the `merge` module's.

use wasmtime::component::InstancePre;

use super::{UdfError, sandbox::State};

/// The `fleet-analysis` world's bindings, sharing every type with the `analysis` world's.
mod world {
    wasmtime::component::bindgen!({
        path: "../../udf-sdk/wit",
        world: "fleet-analysis",
        imports: { default: trappable },
        with: {
            "loupe:udf/types": crate::bindings::loupe::udf::types,
            "loupe:udf/data": crate::bindings::loupe::udf::data,
        },
    });
}

pub use world::FleetAnalysisPre;

/// The merge entry point of a compiled analysis that exports it.
pub type MergePre = FleetAnalysisPre<State>;

/// `Some` when the component exports `merge` (checked against the `fleet-analysis` world).
pub fn merge_pre(pre: &InstancePre<State>, exports_merge: bool) -> Result<Option<MergePre>, UdfError> {
    if !exports_merge {
        return Ok(None);
    }
    FleetAnalysisPre::new(pre.clone())
        .map(Some)
        .map_err(|e| UdfError::Incompatible(format!("it exports merge, but not as the fleet-analysis world: {e:#}")))
}
