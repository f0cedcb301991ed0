//! The OrderedParamSet (`spec/tracestore.md` 6): the per-tile dictionary that turns trace
//! params into the compact trace subkey `,0=1,4=2,` and back.

use crate::digits::decimal;
use alloc::collections::btree_map::Entry;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::CodecError;

/// A trace's params (or options): key -> value.
pub type Params = BTreeMap<String, String>;

/// A param set: key -> values (in insertion order for an OPS, sorted in a read result).
pub type ParamSet = BTreeMap<String, Vec<String>>;

/// Go's `paramtools.OrderedParamSet`: `KeyOrder` gives key indices, the position of a value in
/// `ParamSet[key]` its value index. Lists only grow.
///
/// The lists are private so that the value -> index maps kept beside them always agree with
/// them: encoding a trace id and finding what a Put adds are lookups, not scans of lists that
/// hold every trace name of the tile.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OrderedParamSet {
    /// Keys in index order.
    key_order: Vec<String>,
    /// Values of each key in index order.
    param_set: ParamSet,
    /// Key -> its first position in `key_order`.
    key_index: BTreeMap<String, usize>,
    /// Key of `param_set` -> value -> its first position in the key's list.
    value_index: BTreeMap<String, BTreeMap<String, usize>>,
}

impl core::fmt::Debug for OrderedParamSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The indices say nothing the lists do not.
        f.debug_struct("OrderedParamSet")
            .field("key_order", &self.key_order)
            .field("param_set", &self.param_set)
            .finish()
    }
}

/// `value -> first position` of a value list.
fn index_of_values(values: &[String]) -> BTreeMap<String, usize> {
    let mut index = BTreeMap::new();
    for (j, v) in values.iter().enumerate() {
        index.entry(v.clone()).or_insert(j);
    }
    index
}

/// The most params the merged walk of an encoding takes (a trace has a few dozen); more are
/// encoded by a search per key.
const MERGED_WALK_MAX_PARAMS: usize = 64;

/// Advances a key-sorted walk to `key`: its value if the map holds `key`, `None` (the walk
/// left at the first greater key) if not.
fn next_equal<'a, V>(
    walk: &mut core::iter::Peekable<alloc::collections::btree_map::Iter<'a, String, V>>,
    key: &str,
) -> Option<&'a V> {
    while let Some((k, _)) = walk.peek() {
        match k.as_str().cmp(key) {
            core::cmp::Ordering::Less => {
                walk.next();
            }
            core::cmp::Ordering::Equal => return walk.next().map(|(_, v)| v),
            core::cmp::Ordering::Greater => return None,
        }
    }
    None
}

impl OrderedParamSet {
    /// An empty OPS.
    pub fn new() -> OrderedParamSet {
        OrderedParamSet::default()
    }

    /// An OPS with these lists as they are (duplicates included, as a stored OPS may hold
    /// them: the first occurrence is the one an encoding uses).
    pub fn from_parts(key_order: Vec<String>, param_set: ParamSet) -> OrderedParamSet {
        let mut key_index = BTreeMap::new();
        for (i, k) in key_order.iter().enumerate() {
            key_index.entry(k.clone()).or_insert(i);
        }
        let value_index = param_set
            .iter()
            .map(|(k, values)| (k.clone(), index_of_values(values)))
            .collect();
        OrderedParamSet {
            key_order,
            param_set,
            key_index,
            value_index,
        }
    }

    /// Keys in index order.
    pub fn key_order(&self) -> &[String] {
        &self.key_order
    }

    /// Values of each key in index order.
    pub fn param_set(&self) -> &ParamSet {
        &self.param_set
    }

    /// The key order and the param set.
    pub fn into_parts(self) -> (Vec<String>, ParamSet) {
        (self.key_order, self.param_set)
    }

    /// `EncodeParamsAsString`: `,i=j,` for every key of `params` in the KeyOrder, in key-index
    /// order. Keys the OPS does not know are ignored (reproduced); an unknown value is
    /// `Unknown value`; nothing encoded is `No params encoded.`
    pub fn encode_params(&self, params: &Params) -> Result<String, CodecError> {
        self.encode(params).map(|(encoded, _)| encoded)
    }

    /// The encoding of `params` when the OPS already holds every key and value of it (so
    /// that updating the OPS with `params` would change nothing); `None` otherwise, and when
    /// `params` does not encode.
    pub fn encode_known_params(&self, params: &Params) -> Option<String> {
        match self.encode(params) {
            Ok((encoded, true)) => Some(encoded),
            _ => None,
        }
    }

    /// The encoding, and whether every key of `params` is in the KeyOrder.
    fn encode(&self, params: &Params) -> Result<(String, bool), CodecError> {
        // Most ids are short: `,` and a few `i=j,` pieces.
        let mut out = String::with_capacity(1 + 6 * params.len());
        out.push(',');
        let distinct_keys = self.key_index.len() == self.key_order.len();
        // `params`, `key_index` and `value_index` are all sorted by key: walking them side by
        // side compares each key about once, where a search per key compared each several
        // times (the searches were the whole cost). A KeyOrder listing a key twice encodes it
        // twice, and a KeyOrder much longer than `params` is cheaper searched: both keep the
        // walk over the KeyOrder.
        let merge = distinct_keys
            && params.len() <= MERGED_WALK_MAX_PARAMS
            && self.key_order.len() <= 4 * params.len();
        let (pieces, keys_found) = if merge {
            self.indices_merged(params)?
        } else {
            self.indices_searched(params, distinct_keys)?
        };
        if pieces.is_empty() {
            return Err(CodecError::NoParamsEncoded);
        }
        for (i, j) in pieces {
            push_decimal(&mut out, i);
            out.push('=');
            push_decimal(&mut out, j);
            out.push(',');
        }
        Ok((out, keys_found == params.len()))
    }

    /// The `(key index, value index)` pieces of `params` in KeyOrder order, by one walk over
    /// the three key-sorted maps (distinct KeyOrder keys only); and how many keys of `params`
    /// the KeyOrder holds.
    fn indices_merged(&self, params: &Params) -> Result<(Vec<(usize, usize)>, usize), CodecError> {
        let mut pieces = Vec::with_capacity(params.len());
        let mut order = self.key_index.iter().peekable();
        let mut values = self.value_index.iter().peekable();
        for (key, value) in params {
            let Some(&i) = next_equal(&mut order, key) else {
                continue;
            };
            let j = next_equal(&mut values, key)
                .and_then(|index| index.get(value))
                .copied()
                .ok_or(CodecError::UnknownValue)?;
            pieces.push((i, j));
        }
        let found = pieces.len();
        // Into KeyOrder order. At most `MERGED_WALK_MAX_PARAMS` pieces, usually already in
        // order (Gold appends keys to the KeyOrder in ascending order): an insertion sort,
        // where a library sort added 12 KB to the wasm package.
        for k in 1..pieces.len() {
            let mut m = k;
            while m > 0 && pieces[m - 1].0 > pieces[m].0 {
                pieces.swap(m - 1, m);
                m -= 1;
            }
        }
        Ok((pieces, found))
    }

    /// [`Self::indices_merged`] by a walk over the KeyOrder with a search per key.
    fn indices_searched(
        &self,
        params: &Params,
        distinct_keys: bool,
    ) -> Result<(Vec<(usize, usize)>, usize), CodecError> {
        let mut pieces = Vec::with_capacity(params.len());
        let mut keys_found = 0;
        for (i, key) in self.key_order.iter().enumerate() {
            let Some(value) = params.get(key) else {
                continue;
            };
            let j = self
                .value_index
                .get(key)
                .and_then(|values| values.get(value))
                .copied()
                .ok_or(CodecError::UnknownValue)?;
            pieces.push((i, j));
            // A key listed twice counts once.
            if distinct_keys || self.key_index.get(key) == Some(&i) {
                keys_found += 1;
            }
        }
        Ok((pieces, keys_found))
    }

    /// `DecodeParamsFromString`: pieces split on `,` (empty ones skipped), each `i=j` with `i`
    /// and `j` exact decimal indices (no sign, no leading zero). A repeated key keeps the last
    /// value.
    pub fn decode_params(&self, encoded: &[u8]) -> Result<Params, CodecError> {
        let mut params = Params::new();
        for piece in encoded.split(|&b| b == b',') {
            if piece.is_empty() {
                continue;
            }
            let bad = |reason| CodecError::BadTraceId {
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
            // One search per piece (`get_mut` then `insert` searched twice); a sorted bulk
            // build measured 9 % faster still but added 15 KB of sort code to the wasm package.
            match params.entry(key.clone()) {
                Entry::Vacant(new) => {
                    new.insert(value.clone());
                }
                Entry::Occupied(mut repeated) => repeated.get_mut().clone_from(value),
            }
        }
        Ok(params)
    }

    /// `Delta(ps)`: what `ps` holds that the OPS does not (new keys with all their values,
    /// new values of known keys, in `ps` order).
    pub fn delta(&self, ps: &ParamSet) -> ParamSet {
        let mut out = ParamSet::new();
        for (key, values) in ps {
            let known = self.value_index.get(key);
            let mut missing: Vec<String> = Vec::new();
            let mut seen: BTreeSet<&str> = BTreeSet::new();
            for v in values {
                let present = known.is_some_and(|k| k.contains_key(v));
                if !present && seen.insert(v.as_str()) {
                    missing.push(v.clone());
                }
            }
            if !missing.is_empty() || (known.is_none() && !self.key_index.contains_key(key)) {
                out.insert(key.clone(), missing);
            }
        }
        out
    }

    /// `Update(ps)`: new keys appended to the KeyOrder in ascending byte order (the
    /// project's deterministic choice), then every new value appended in `ps` order.
    pub fn update(&mut self, ps: &ParamSet) {
        self.update_in_key_order(&[], ps);
    }

    /// `Update(ps)` with the new keys that `key_order` names appended in its order first, then
    /// the other new keys of `ps` in ascending byte order; new values in `ps` order. The
    /// migration copies a tile's OPS this way (`docs/migration.md` §5.3 step 2): given the
    /// source's KeyOrder and values, an empty (or copied) OPS comes out with the source's
    /// indices.
    pub fn update_in_key_order(&mut self, key_order: &[String], ps: &ParamSet) {
        let ordered = key_order.iter().filter(|k| ps.contains_key(*k));
        // A BTreeMap iterates in ascending byte order of the keys.
        for key in ordered.chain(ps.keys()) {
            if !self.key_index.contains_key(key) {
                self.key_index.insert(key.clone(), self.key_order.len());
                self.key_order.push(key.clone());
            }
        }
        for (key, values) in ps {
            if !self.param_set.contains_key(key) {
                self.param_set.insert(key.clone(), Vec::new());
                self.value_index.insert(key.clone(), BTreeMap::new());
            }
            let (Some(list), Some(index)) =
                (self.param_set.get_mut(key), self.value_index.get_mut(key))
            else {
                continue;
            };
            for v in values {
                if !index.contains_key(v) {
                    index.insert(v.clone(), list.len());
                    list.push(v.clone());
                }
            }
        }
    }
}

/// Appends `n` in decimal (what `strconv.Itoa` writes).
fn push_decimal(out: &mut String, n: usize) {
    let mut buf = [0u8; 20];
    out.extend(decimal(n as u64, &mut buf).iter().map(|&d| char::from(d)));
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

/// A [`ParamSet`] gathered from many [`Params`] (Go's `ps.AddParams` over each): values in
/// order of first appearance, each new value found by a lookup, not a scan of its list.
#[derive(Clone, Debug, Default)]
pub struct ParamSetBuilder {
    ps: ParamSet,
    seen: BTreeMap<String, BTreeSet<String>>,
}

impl ParamSetBuilder {
    /// An empty param set.
    pub fn new() -> ParamSetBuilder {
        ParamSetBuilder::default()
    }

    /// Adds every pair of `params`.
    pub fn add(&mut self, params: &Params) {
        for (k, v) in params {
            if !self.seen.contains_key(k) {
                self.seen.insert(k.clone(), BTreeSet::new());
                self.ps.insert(k.clone(), Vec::new());
            }
            let (Some(seen), Some(list)) = (self.seen.get_mut(k), self.ps.get_mut(k)) else {
                continue;
            };
            if !seen.contains(v) {
                seen.insert(v.clone());
                list.push(v.clone());
            }
        }
    }

    /// The param set, values in order of first appearance.
    pub fn finish(self) -> ParamSet {
        self.ps
    }

    /// The param set with every value list sorted (what [`normalize_param_set`] gives).
    pub fn finish_sorted(self) -> ParamSet {
        self.seen
            .into_iter()
            .map(|(k, values)| (k, values.into_iter().collect()))
            .collect()
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
pub fn parse_options_text(text: &[u8]) -> Result<Params, CodecError> {
    let text = core::str::from_utf8(text).map_err(|_| CodecError::BadOptions)?;
    let parts: Vec<&str> = text.split(',').collect();
    let mut out = Params::new();
    if parts.len() < 3 {
        return Ok(out);
    }
    for part in &parts[1..parts.len() - 1] {
        let (k, v) = part.split_once('=').ok_or(CodecError::BadOptions)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn tile_ops() -> OrderedParamSet {
        // `name` lists `b` twice: a stored OPS may, and the first position is the index.
        OrderedParamSet::from_parts(
            strings(&["name", "arch", "name"]),
            [
                ("name".to_string(), strings(&["a", "b", "c", "b"])),
                ("arch".to_string(), strings(&["x86", "arm"])),
                ("os".to_string(), strings(&["linux"])),
            ]
            .into(),
        )
    }

    #[test]
    fn known_params_encode_like_encode_params() {
        let ops = tile_ops();
        let p = params_from([("name", "b"), ("arch", "arm")]);
        // The key listed twice is encoded twice, as Go's loop over KeyOrder does.
        assert_eq!(ops.encode_params(&p).unwrap(), ",0=1,1=1,2=1,");
        assert_eq!(ops.encode_known_params(&p).unwrap(), ",0=1,1=1,2=1,");
    }

    /// The merged walk gives what the search per KeyOrder key gives (the path the vectors and
    /// the tests above pin down), on OPS and params drawn with unknown keys and values.
    #[test]
    fn merged_walk_equals_search_per_key() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut draw = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut compared = 0;
        for _ in 0..2000 {
            let keys: Vec<String> = (0..1 + draw(12)).map(|k| format!("k{k}")).collect();
            let mut order = keys.clone();
            for i in (1..order.len()).rev() {
                order.swap(i, draw(i as u64 + 1) as usize);
            }
            order.truncate(1 + draw(order.len() as u64) as usize);
            let mut param_set = ParamSet::new();
            for k in &keys {
                if draw(5) != 0 {
                    let values = (0..1 + draw(4)).map(|v| format!("v{v}")).collect();
                    param_set.insert(k.clone(), values);
                }
            }
            let ops = OrderedParamSet::from_parts(order, param_set);
            let mut params = Params::new();
            for k in 0..draw(14) {
                params.insert(format!("k{k}"), format!("v{}", draw(5)));
            }
            assert_eq!(
                ops.indices_merged(&params),
                ops.indices_searched(&params, true),
                "{ops:?} {params:?}"
            );
            compared += usize::from(
                ops.indices_merged(&params)
                    .is_ok_and(|(p, _)| !p.is_empty()),
            );
        }
        // Enough draws encode something for the comparison to mean anything.
        assert!(compared > 200, "{compared}");
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let ops = tile_ops();
        // KeyOrder positions 0 and 2 are both `name`.
        assert_eq!(
            ops.decode_params(b",0=0,1=1,2=2,").unwrap(),
            params_from([("name", "c"), ("arch", "arm")])
        );
        assert_eq!(
            ops.decode_params(b",2=2,,0=0,").unwrap(),
            params_from([("name", "a")])
        );
        assert_eq!(
            ops.decode_params(b",1=0,1=1,1=0,").unwrap(),
            params_from([("arch", "x86")])
        );
    }

    #[test]
    fn params_new_to_the_ops_are_not_known() {
        let ops = tile_ops();
        // A new value.
        assert_eq!(ops.encode_known_params(&params_from([("name", "d")])), None);
        // A key outside the KeyOrder: encode_params ignores it, an update would add it.
        let p = params_from([("name", "a"), ("gpu", "none")]);
        assert_eq!(ops.encode_params(&p).unwrap(), ",0=0,2=0,");
        assert_eq!(ops.encode_known_params(&p), None);
        // A key of the ParamSet outside the KeyOrder.
        assert_eq!(
            ops.encode_known_params(&params_from([("arch", "x86"), ("os", "linux")])),
            None
        );
        // Nothing to encode.
        assert_eq!(ops.encode_known_params(&Params::new()), None);
    }

    #[test]
    fn update_keeps_first_positions_and_appends_in_order() {
        let mut ops = tile_ops();
        let ps: ParamSet = [
            ("name".to_string(), strings(&["b", "e", "d", "e"])),
            ("gpu".to_string(), strings(&["none"])),
        ]
        .into();
        assert_eq!(
            ops.delta(&ps),
            [
                ("name".to_string(), strings(&["e", "d"])),
                ("gpu".to_string(), strings(&["none"])),
            ]
            .into()
        );
        ops.update(&ps);
        assert_eq!(ops.key_order(), strings(&["name", "arch", "name", "gpu"]));
        assert_eq!(
            ops.param_set()["name"],
            strings(&["a", "b", "c", "b", "e", "d"])
        );
        let p = params_from([("name", "d"), ("gpu", "none")]);
        assert_eq!(ops.encode_known_params(&p).unwrap(), ",0=5,2=5,3=0,");
        assert!(ops.delta(&ps).is_empty());
    }

    #[test]
    fn a_param_set_keeps_the_order_of_first_appearance() {
        let mut b = ParamSetBuilder::new();
        b.add(&params_from([("name", "z"), ("arch", "arm")]));
        b.add(&params_from([("name", "a"), ("arch", "arm")]));
        b.add(&params_from([("name", "z")]));
        let sorted = b.clone().finish_sorted();
        assert_eq!(
            b.finish(),
            [
                ("arch".to_string(), vec!["arm".to_string()]),
                ("name".to_string(), strings(&["z", "a"])),
            ]
            .into()
        );
        assert_eq!(sorted["name"], strings(&["a", "z"]));
    }
}
