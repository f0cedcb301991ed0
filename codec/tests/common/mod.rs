#![allow(dead_code)] // each test binary uses part of the helpers
//! What the vector tests share: reading `$ROWKIT_SHARED/vectors/<file>` at run time into the
//! test's own strictly typed structs, and [`Cases`], a list of cases that names the failing
//! case when one does not match its struct.
//!
//! Every case struct of the vector tests is `#[serde(deny_unknown_fields)]` and every field
//! is read by a check: a field or a case kind a test does not know fails the run (it is never
//! skipped silently), and `dead_code` (an error under `clippy -D warnings`) flags a field no
//! check reads.

use serde::de::{DeserializeOwned, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The `shared` directory: `$ROWKIT_SHARED`, else `../shared` beside the workspace.
pub fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string())
}

/// The text of `vectors/<name>`; fails the test if it is missing.
pub fn vector_text(name: &str) -> String {
    let path = format!("{}/vectors/{name}", shared_dir());
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("vector file {path} is required: {e}"))
}

/// `vectors/<name>` parsed into `T`; an unknown or missing field fails with its place.
pub fn load<T: DeserializeOwned>(name: &str) -> T {
    serde_json::from_str(&vector_text(name)).unwrap_or_else(|e| panic!("vectors/{name}: {e}"))
}

/// `codec/tests/vectors/<name>`, the repository's own vectors (cases the shared files lack,
/// with expected values from a generator outside rowkit), parsed into `T`.
pub fn load_repo<T: DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The cases of one kind, in file order. Deserialising names the case (its index, and the
/// line and column of the file) that does not match `T`. Each case is deserialised straight
/// from the file, so a member-order-preserving field type (rowkit's `Json`) keeps the file's
/// order.
#[derive(Debug)]
pub struct Cases<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Cases<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Each<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Each<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of cases")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
                let mut cases = Vec::new();
                loop {
                    let i = cases.len();
                    match seq.next_element::<T>() {
                        Ok(Some(c)) => cases.push(c),
                        Ok(None) => return Ok(cases),
                        Err(e) => return Err(A::Error::custom(format!("case {i}: {e}"))),
                    }
                }
            }
        }
        d.deserialize_seq(Each(std::marker::PhantomData)).map(Cases)
    }
}

impl<T> Cases<T> {
    /// The cases; fails if there are none (`kind` names them), as an empty kind would test
    /// nothing.
    pub fn non_empty(&self, kind: &str) -> &[T] {
        assert!(!self.0.is_empty(), "no cases in {kind}");
        &self.0
    }
}

/// A JSON value that must be present but may be `null` (serde's `Option` also accepts an
/// absent member; these fields are required).
pub fn required_nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of lowercase or uppercase hex; fails on anything else.
pub fn unhex(h: &str) -> Vec<u8> {
    assert!(h.len().is_multiple_of(2), "odd hex {h:?}");
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or_else(|e| panic!("{h:?}: {e}")))
        .collect()
}

/// The file's `meta` names the spec it follows.
pub fn check_meta(meta: &Value, spec: &str) {
    assert_eq!(meta["spec"], spec, "meta.spec of the {spec} vectors");
}
