//! The escaped key text (`rowkit_codec::escape`): parsing never panics, and escaping then
//! parsing gives back the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rowkit_codec::escape::{escape, parse};

fuzz_target!(|data: &[u8]| {
    assert_eq!(parse(&escape(data)).ok().as_deref(), Some(data));
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(bytes) = parse(text) {
            // What parses re-escapes to a canonical form that parses to the same bytes.
            assert_eq!(parse(&escape(&bytes)).ok(), Some(bytes));
        }
    }
});
