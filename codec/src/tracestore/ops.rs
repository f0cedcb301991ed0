//! The OrderedParamSet (`spec/tracestore.md` 6): the per-tile dictionary that turns trace
//! params into the compact trace subkey `,0=1,4=2,` and back.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::TraceStoreError;

/// A trace's params (or options): key -> value.
pub type Params = BTreeMap<String, String>;

/// A param set: key -> values (in insertion order for an OPS, sorted in a read result).
pub type ParamSet = BTreeMap<String, Vec<String>>;

/// Go's `paramtools.OrderedParamSet`: `KeyOrder` gives key indices, the position of a value in
/// `ParamSet[key]` its value index. Lists only grow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderedParamSet {
    /// Keys in index order.
    pub key_order: Vec<String>,
    /// Values of each key in index order.
    pub param_set: ParamSet,
}

impl OrderedParamSet {
    /// An empty OPS.
    pub fn new() -> OrderedParamSet {
        OrderedParamSet::default()
    }

    /// `EncodeParamsAsString`: `,i=j,` for every key of `params` in the KeyOrder, in key-index
    /// order. Keys the OPS does not know are ignored (reproduced); an unknown value is
    /// `Unknown value`; nothing encoded is `No params encoded.`
    pub fn encode_params(&self, params: &Params) -> Result<String, TraceStoreError> {
        let mut out = String::from(",");
        let mut any = false;
        for (i, key) in self.key_order.iter().enumerate() {
            let Some(value) = params.get(key) else {
                continue;
            };
            let j = self
                .param_set
                .get(key)
                .and_then(|values| values.iter().position(|v| v == value))
                .ok_or(TraceStoreError::UnknownValue)?;
            out.push_str(&format!("{i}={j},"));
            any = true;
        }
        if !any {
            return Err(TraceStoreError::NoParamsEncoded);
        }
        Ok(out)
    }

    /// `DecodeParamsFromString`: pieces split on `,` (empty ones skipped), each `i=j` with `i`
    /// and `j` exact decimal indices (no sign, no leading zero). A repeated key keeps the last
    /// value.
    pub fn decode_params(&self, encoded: &[u8]) -> Result<Params, TraceStoreError> {
        let mut params = Params::new();
        for piece in encoded.split(|&b| b == b',') {
            if piece.is_empty() {
                continue;
            }
            let bad = |reason| TraceStoreError::BadTraceId {
                reason,
                piece: String::from_utf8_lossy(piece).into_owned(),
            };
            let eq = piece
                .iter()
                .position(|&b| b == b'=')
                .ok_or_else(|| bad("failed to parse"))?;
            let key = exact_index(&piece[..eq])
                .and_then(|i| self.key_order.get(i))
                .ok_or_else(|| bad("failed to find key"))?;
            let value = exact_index(&piece[eq + 1..])
                .and_then(|j| self.param_set.get(key).and_then(|vs| vs.get(j)))
                .ok_or_else(|| bad("failed to find value"))?;
            params.insert(key.clone(), value.clone());
        }
        Ok(params)
    }

    /// `Delta(ps)`: what `ps` holds that the OPS does not (new keys with all their values,
    /// new values of known keys, in `ps` order).
    pub fn delta(&self, ps: &ParamSet) -> ParamSet {
        let mut out = ParamSet::new();
        for (key, values) in ps {
            let known = self.param_set.get(key);
            let mut missing: Vec<String> = Vec::new();
            for v in values {
                let present = known.is_some_and(|k| k.contains(v)) || missing.contains(v);
                if !present {
                    missing.push(v.clone());
                }
            }
            if !missing.is_empty() || (known.is_none() && !self.key_order.contains(key)) {
                out.insert(key.clone(), missing);
            }
        }
        out
    }

    /// `Update(ps)`: new keys appended to the KeyOrder in ascending byte order (the
    /// project's deterministic choice), then every new value appended in `ps` order.
    pub fn update(&mut self, ps: &ParamSet) {
        // A BTreeMap iterates in ascending byte order of the keys.
        for key in ps.keys() {
            if !self.key_order.contains(key) {
                self.key_order.push(key.clone());
            }
            self.param_set.entry(key.clone()).or_default();
        }
        for (key, values) in ps {
            let list = self.param_set.entry(key.clone()).or_default();
            for v in values {
                if !list.contains(v) {
                    list.push(v.clone());
                }
            }
        }
    }
}

/// An index written as `strconv.Itoa` writes it: `0`, or digits without a leading zero.
fn exact_index(text: &[u8]) -> Option<usize> {
    let canonical = !text.is_empty()
        && text.iter().all(u8::is_ascii_digit)
        && (text.len() == 1 || text[0] != b'0');
    if !canonical || text.len() > 18 {
        return None;
    }
    Some(
        text.iter()
            .fold(0usize, |acc, &d| acc * 10 + usize::from(d - b'0')),
    )
}

/// Adds every pair of `params` to `ps` (values in order of first appearance).
pub fn add_params(ps: &mut ParamSet, params: &Params) {
    for (k, v) in params {
        let list = ps.entry(k.clone()).or_default();
        if !list.contains(v) {
            list.push(v.clone());
        }
    }
}

/// Sorts every value list (Go `sort.Strings`) and removes duplicates.
pub fn normalize_param_set(ps: &mut ParamSet) {
    for values in ps.values_mut() {
        let set: BTreeSet<String> = values.drain(..).collect();
        values.extend(set);
    }
}

/// Cleans a key or value for the trace-id text: `,` -> `%2C`, `=` -> `_`.
fn clean(s: &str) -> String {
    s.replace(',', "%2C").replace('=', "_")
}

/// The trace-id text of a map (`spec/tracestore.md` 5.3): cleaned keys sorted by byte
/// order, `,k=v,k=v,`. Two keys that clean alike keep the value of the greater original key.
pub fn trace_id_text(params: &Params) -> String {
    let mut cleaned: BTreeMap<String, String> = BTreeMap::new();
    // Ascending original keys: a later (greater) key overwrites an earlier one.
    for (k, v) in params {
        cleaned.insert(clean(k), clean(v));
    }
    let mut out = String::from(",");
    for (k, v) in &cleaned {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push(',');
    }
    out
}

/// Parses an options cell (`spec/tracestore.md` 5.3): fewer than 3 `,`-parts is the empty
/// map; inner parts are `k=v` split at the first `=` (else `bad options`); `%2C` -> `,`.
pub fn parse_options_text(text: &[u8]) -> Result<Params, TraceStoreError> {
    let text = core::str::from_utf8(text).map_err(|_| TraceStoreError::BadOptions)?;
    let parts: Vec<&str> = text.split(',').collect();
    let mut out = Params::new();
    if parts.len() < 3 {
        return Ok(out);
    }
    for part in &parts[1..parts.len() - 1] {
        let (k, v) = part.split_once('=').ok_or(TraceStoreError::BadOptions)?;
        out.insert(k.replace("%2C", ","), v.replace("%2C", ","));
    }
    Ok(out)
}

/// Builds a [`Params`] from pairs (test and CLI convenience).
pub fn params_from<K: ToString, V: ToString>(pairs: impl IntoIterator<Item = (K, V)>) -> Params {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
