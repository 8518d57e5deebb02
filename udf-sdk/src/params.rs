//! Parameters: declaring them ([`Param`](crate::Param)) and reading them ([`Params`]).

use crate::types::{Param as ParamEntry, ParamKind, ParamSpec, ParamValue};

impl ParamSpec {
    fn new(name: &str, kind: ParamKind, description: &str) -> Self {
        Self { name: name.to_string(), kind, default: None, description: description.to_string() }
    }

    /// An unsigned integer (`u64`); required unless given a [`default`](Self::default).
    pub fn unsigned(name: &str, description: &str) -> Self {
        Self::new(name, ParamKind::Unsigned, description)
    }

    /// A float (`f64`); required unless given a [`default`](Self::default).
    pub fn float(name: &str, description: &str) -> Self {
        Self::new(name, ParamKind::Float, description)
    }

    /// A string; required unless given a [`default`](Self::default).
    pub fn text(name: &str, description: &str) -> Self {
        Self::new(name, ParamKind::Text, description)
    }

    /// A boolean; required unless given a [`default`](Self::default).
    pub fn flag(name: &str, description: &str) -> Self {
        Self::new(name, ParamKind::Flag, description)
    }

    /// The value used when the caller leaves the parameter out (which makes it optional).
    ///
    /// # Panics
    /// When the value's type is not the parameter's kind (`Param::unsigned(..).default(1.5)`):
    /// `describe` then traps, and the host refuses the module at upload.
    pub fn default(mut self, value: impl Into<ParamValue>) -> Self {
        let value = value.into();
        assert!(
            kind_of(&value) == self.kind,
            "parameter `{}` is {} but its default is {}",
            self.name,
            kind_name(self.kind),
            kind_name(kind_of(&value))
        );
        self.default = Some(value);
        self
    }

    /// Whether the caller must give it (no default).
    pub fn is_required(&self) -> bool {
        self.default.is_none()
    }
}

fn kind_of(v: &ParamValue) -> ParamKind {
    match v {
        ParamValue::Unsigned(_) => ParamKind::Unsigned,
        ParamValue::Float(_) => ParamKind::Float,
        ParamValue::Text(_) => ParamKind::Text,
        ParamValue::Flag(_) => ParamKind::Flag,
    }
}

fn kind_name(k: ParamKind) -> &'static str {
    match k {
        ParamKind::Unsigned => "unsigned",
        ParamKind::Float => "float",
        ParamKind::Text => "text",
        ParamKind::Flag => "flag",
    }
}

impl From<u64> for ParamValue {
    fn from(v: u64) -> Self {
        Self::Unsigned(v)
    }
}
impl From<u32> for ParamValue {
    fn from(v: u32) -> Self {
        Self::Unsigned(v.into())
    }
}
impl From<f64> for ParamValue {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}
impl From<&str> for ParamValue {
    fn from(v: &str) -> Self {
        Self::Text(v.to_string())
    }
}
impl From<String> for ParamValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}
impl From<bool> for ParamValue {
    fn from(v: bool) -> Self {
        Self::Flag(v)
    }
}

/// The parameters of one invocation: every declared parameter, in declaration order, with
/// defaults filled in and types checked by the host. The typed getters fail (with a message
/// naming the parameter) only when asked for a name or type the description does not declare.
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<ParamEntry>);

impl Params {
    pub fn new(params: Vec<ParamEntry>) -> Self {
        Self(params)
    }

    /// Builds a parameter list by hand (for tests): `Params::from_pairs([("top", 5u64.into())])`.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, ParamValue)>) -> Self {
        Self(pairs.into_iter().map(|(name, value)| ParamEntry { name: name.to_string(), value }).collect())
    }

    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.0.iter().find(|p| p.name == name).map(|p| &p.value)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.0.iter().map(|p| (p.name.as_str(), &p.value))
    }

    fn lookup(&self, name: &str, want: ParamKind) -> Result<&ParamValue, String> {
        match self.get(name) {
            None => Err(format!("parameter `{name}` is missing (is it declared in describe()?)")),
            Some(v) if kind_of(v) == want => Ok(v),
            Some(ParamValue::Unsigned(_)) if want == ParamKind::Float => Ok(self.get(name).unwrap()),
            Some(v) => Err(format!("parameter `{name}` is {}, not {}", kind_name(kind_of(v)), kind_name(want))),
        }
    }

    pub fn u64(&self, name: &str) -> Result<u64, String> {
        match self.lookup(name, ParamKind::Unsigned)? {
            ParamValue::Unsigned(v) => Ok(*v),
            _ => unreachable!(),
        }
    }

    /// An unsigned parameter that must fit in a `u32` (a pid, a CPU).
    pub fn u32(&self, name: &str) -> Result<u32, String> {
        let v = self.u64(name)?;
        u32::try_from(v).map_err(|_| format!("parameter `{name}` is {v}, more than {}", u32::MAX))
    }

    /// A float parameter (an unsigned value is accepted and converted).
    pub fn f64(&self, name: &str) -> Result<f64, String> {
        match self.lookup(name, ParamKind::Float)? {
            ParamValue::Float(v) => Ok(*v),
            ParamValue::Unsigned(v) => Ok(*v as f64),
            _ => unreachable!(),
        }
    }

    pub fn text(&self, name: &str) -> Result<&str, String> {
        match self.lookup(name, ParamKind::Text)? {
            ParamValue::Text(v) => Ok(v),
            _ => unreachable!(),
        }
    }

    pub fn flag(&self, name: &str) -> Result<bool, String> {
        match self.lookup(name, ParamKind::Flag)? {
            ParamValue::Flag(v) => Ok(*v),
            _ => unreachable!(),
        }
    }

    /// An unsigned parameter where 0 means "not set" (`pid = 0`: every process).
    pub fn nonzero_u32(&self, name: &str) -> Result<Option<u32>, String> {
        self.u32(name).map(|v| (v != 0).then_some(v))
    }

    /// A text parameter where "" means "not set" (`comm = ""`: every command).
    pub fn nonempty_text(&self, name: &str) -> Result<Option<&str>, String> {
        self.text(name).map(|v| (!v.is_empty()).then_some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Param;

    #[test]
    fn typed_getters() {
        let p = Params::from_pairs([
            ("n", 7u64.into()),
            ("x", 1.5.into()),
            ("s", "eth0".into()),
            ("b", true.into()),
            ("big", u64::MAX.into()),
        ]);
        assert_eq!(p.u64("n"), Ok(7));
        assert_eq!(p.u32("n"), Ok(7));
        assert_eq!(p.f64("x"), Ok(1.5));
        assert_eq!(p.f64("n"), Ok(7.0));
        assert_eq!(p.text("s"), Ok("eth0"));
        assert_eq!(p.flag("b"), Ok(true));
        assert!(p.u64("missing").unwrap_err().contains("`missing` is missing"));
        assert_eq!(p.text("n").unwrap_err(), "parameter `n` is unsigned, not text");
        assert!(p.u32("big").is_err());
        assert_eq!(p.nonzero_u32("n"), Ok(Some(7)));
    }

    #[test]
    fn specs() {
        let p = Param::unsigned("threshold_bps", "bytes per second");
        assert!(p.is_required());
        let p = p.default(5u64);
        assert_eq!(p.default, Some(ParamValue::Unsigned(5)));
        assert_eq!(p.kind, ParamKind::Unsigned);
    }

    #[test]
    #[should_panic(expected = "parameter `t` is unsigned but its default is text")]
    fn mismatched_default() {
        let _ = Param::unsigned("t", "").default("x");
    }
}
