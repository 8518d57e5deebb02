//! An analysis' self-description and its parameters: JSON from the caller, checked against
//! what the analysis declared, handed to the guest typed and complete (defaults filled in).

use serde_json::{Map, Value};

pub use loupe_api::model::{Description, ParamKind, ParamSpec, ResultKind};

use super::{UdfError, bindings::wit};

/// What the guest's `describe()` returned, checked: parameter names once each, defaults of
/// their declared type.
pub fn description_of(d: wit::Description) -> Result<Description, String> {
    let mut params = Vec::new();
    for p in d.params {
        if params.iter().any(|q: &ParamSpec| q.name == p.name) {
            return Err(format!("describe() declares parameter '{}' twice", p.name));
        }
        let kind = match p.kind {
            wit::ParamKind::Unsigned => ParamKind::Unsigned,
            wit::ParamKind::Float => ParamKind::Float,
            wit::ParamKind::Text => ParamKind::Text,
            wit::ParamKind::Flag => ParamKind::Flag,
        };
        let default = p.default.map(|v| to_json(&v));
        if let Some(v) = &default
            && convert(kind, v).is_none()
        {
            return Err(format!("describe(): parameter '{}' has a default of the wrong type", p.name));
        }
        params.push(ParamSpec { name: p.name, kind, default, description: p.description });
    }
    let result_kind = match d.result_kind {
        wit::ResultKind::Table => ResultKind::Table,
        wit::ResultKind::Series => ResultKind::Series,
        wit::ResultKind::Flamegraph => ResultKind::Flamegraph,
        wit::ResultKind::Text => ResultKind::Text,
    };
    Ok(Description { name: d.name, version: d.version, summary: d.summary, params, result_kind, mergeable: false })
}

fn to_json(v: &wit::ParamValue) -> Value {
    match v {
        wit::ParamValue::Unsigned(n) => Value::from(*n),
        wit::ParamValue::Float(f) => Value::from(*f),
        wit::ParamValue::Text(s) => Value::from(s.clone()),
        wit::ParamValue::Flag(b) => Value::from(*b),
    }
}

fn convert(kind: ParamKind, v: &Value) -> Option<wit::ParamValue> {
    Some(match kind {
        ParamKind::Unsigned => wit::ParamValue::Unsigned(v.as_u64()?),
        ParamKind::Float => wit::ParamValue::Float(v.as_f64()?),
        ParamKind::Text => wit::ParamValue::Text(v.as_str()?.to_string()),
        ParamKind::Flag => wit::ParamValue::Flag(v.as_bool()?),
    })
}

fn kind_name(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Unsigned => "an unsigned integer",
        ParamKind::Float => "a number",
        ParamKind::Text => "a string",
        ParamKind::Flag => "true or false",
    }
}

/// Every declared parameter, in order: given, or its default. Unknown names, missing
/// required ones and wrong types are errors naming the parameter.
pub fn resolve_params(specs: &[ParamSpec], given: &Map<String, Value>) -> Result<Vec<wit::Param>, UdfError> {
    if let Some(unknown) = given.keys().find(|k| !specs.iter().any(|s| &s.name == *k)) {
        let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        return Err(UdfError::BadParams(format!("unknown parameter '{unknown}' (the analysis takes {known:?})")));
    }
    specs
        .iter()
        .map(|s| {
            let value = match (given.get(&s.name), &s.default) {
                (Some(v), _) => v,
                (None, Some(d)) => d,
                (None, None) => {
                    return Err(UdfError::BadParams(format!(
                        "missing required parameter '{}' ({})",
                        s.name, s.description
                    )));
                }
            };
            let value = convert(s.kind, value).ok_or_else(|| {
                UdfError::BadParams(format!("parameter '{}' must be {}, got {value}", s.name, kind_name(s.kind)))
            })?;
            Ok(wit::Param { name: s.name.clone(), value })
        })
        .collect()
}
