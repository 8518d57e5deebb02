//! The worlds of analyses that run fleet-wide: `fleet-analysis` (`merge` over results of `run`),
//! `fleet-columns` (`run-columns` and `merge-columns` over columnar results) and
//! `fleet-batches` (`fleet-columns` plus `merge-batch`, a whole group of partials as one). Their
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

/// The `fleet-batches` world's bindings, sharing every type with the `analysis` world's.
mod batches_world {
    wasmtime::component::bindgen!({
        path: "../../udf-sdk/wit",
        world: "fleet-batches",
        imports: { default: trappable },
        with: {
            "loupe:udf/types": crate::bindings::loupe::udf::types,
            "loupe:udf/data": crate::bindings::loupe::udf::data,
        },
    });
}

pub use batches_world::FleetBatchesPre;
pub use columns_world::FleetColumnsPre;
pub use world::FleetAnalysisPre;

/// The merge entry point of a compiled analysis that exports `merge`.
pub type MergePre = FleetAnalysisPre<State>;
/// The entry points of a compiled analysis with columnar partials.
pub type ColumnsPre = FleetColumnsPre<State>;
/// The batch merge of a compiled analysis with columnar partials (`fleet-batches`).
pub type BatchesPre = FleetBatchesPre<State>;

/// How a fleet analysis answers as one host and merges.
#[derive(Clone)]
pub enum Merger {
    /// `run` answers, `merge` merges (`fleet-analysis`).
    Rows(MergePre),
    /// `run-columns` answers, `merge-columns` merges (`fleet-columns`); `merge-batch` merges
    /// a group of one shape when there is one (`fleet-batches`).
    Columns { pre: ColumnsPre, batches: Option<BatchesPre> },
}

/// `Some` when the component exports `merge` or `merge-columns` (checked against its world).
pub fn merger(pre: &InstancePre<State>, exports: &[String]) -> Result<Option<Merger>, UdfError> {
    let exports_ = |name: &str| exports.iter().any(|e| e == name);
    if exports_("merge-columns") {
        let columns = FleetColumnsPre::new(pre.clone()).map_err(|e| {
            UdfError::Incompatible(format!("it exports merge-columns, but not as the fleet-columns world: {e:#}"))
        })?;
        let batches = match exports_("merge-batch") {
            true => Some(FleetBatchesPre::new(pre.clone()).map_err(|e| {
                UdfError::Incompatible(format!("it exports merge-batch, but not as the fleet-batches world: {e:#}"))
            })?),
            false => None,
        };
        return Ok(Some(Merger::Columns { pre: columns, batches }));
    }
    if exports_("merge") {
        return FleetAnalysisPre::new(pre.clone()).map(|p| Some(Merger::Rows(p))).map_err(|e| {
            UdfError::Incompatible(format!("it exports merge, but not as the fleet-analysis world: {e:#}"))
        });
    }
    Ok(None)
}
