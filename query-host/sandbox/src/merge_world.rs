//! The worlds of analyses that run fleet-wide: `fleet-analysis` (`merge` over results of `run`)
//! and `fleet-columns` (`run-columns` and `merge-columns` over columnar results). Their
//! bindings, and which of them a compiled component exports ([`merger`], asked once at compile
//! time by the runtime). Calling them is the `merge` module's (and the runtime's, for
//! `run-columns`).

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

/// The `fleet-columns` world's bindings, sharing every type with the `analysis` world's.
mod columns_world {
    wasmtime::component::bindgen!({
        path: "../../udf-sdk/wit",
        world: "fleet-columns",
        imports: { default: trappable },
        with: {
            "loupe:udf/types": crate::bindings::loupe::udf::types,
            "loupe:udf/data": crate::bindings::loupe::udf::data,
        },
    });
}

pub use columns_world::FleetColumnsPre;
pub use world::FleetAnalysisPre;

/// The merge entry point of a compiled analysis that exports `merge`.
pub type MergePre = FleetAnalysisPre<State>;
/// The entry points of a compiled analysis with columnar partials.
pub type ColumnsPre = FleetColumnsPre<State>;

/// How a fleet analysis answers as one host and merges.
#[derive(Clone)]
pub enum Merger {
    /// `run` answers, `merge` merges (`fleet-analysis`).
    Rows(MergePre),
    /// `run-columns` answers, `merge-columns` merges (`fleet-columns`).
    Columns(ColumnsPre),
}

/// `Some` when the component exports `merge` or `merge-columns` (checked against its world).
pub fn merger(pre: &InstancePre<State>, exports: &[String]) -> Result<Option<Merger>, UdfError> {
    let exports_ = |name: &str| exports.iter().any(|e| e == name);
    if exports_("merge-columns") {
        return FleetColumnsPre::new(pre.clone()).map(|p| Some(Merger::Columns(p))).map_err(|e| {
            UdfError::Incompatible(format!("it exports merge-columns, but not as the fleet-columns world: {e:#}"))
        });
    }
    if exports_("merge") {
        return FleetAnalysisPre::new(pre.clone()).map(|p| Some(Merger::Rows(p))).map_err(|e| {
            UdfError::Incompatible(format!("it exports merge, but not as the fleet-analysis world: {e:#}"))
        });
    }
    Ok(None)
}
