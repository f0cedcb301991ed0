//! The proto3 JSON layer of `rowkit-rest` (`rest-json.md` 5.2, 8) on arbitrary bytes:
//! - the streamed-array splitter gives the same elements and the same verdict for every
//!   chunking of a body;
//! - request, response, stream-element and error decoders never panic, and whatever decodes
//!   re-encodes to JSON that decodes to the same value (compared as JSON, since a NaN sample
//!   rate is not equal to itself).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rowkit_rest::{
    ArraySplitter, Method, TableName, decode_error, decode_request, decode_response,
    decode_stream_element, encode_request, encode_response,
};

#[derive(Arbitrary, Debug)]
struct Input {
    body: Vec<u8>,
    /// Chunk sizes to re-split the body with (cycled; 0 is read as 1).
    cuts: Vec<u8>,
    max_element: u16,
}

fn split(
    body: &[u8],
    cuts: &[u8],
    max: usize,
) -> (Vec<Vec<u8>>, Result<(), rowkit_rest::SplitError>) {
    let mut s = ArraySplitter::with_max_element(max);
    let mut out = Vec::new();
    let mut rest = body;
    let mut k = 0;
    while !rest.is_empty() {
        let n = if cuts.is_empty() {
            rest.len()
        } else {
            usize::from(cuts[k % cuts.len()]).max(1)
        };
        k += 1;
        let n = n.min(rest.len());
        let mut chunk = &rest[..n];
        while !chunk.is_empty() {
            match s.push(chunk) {
                Ok(step) => {
                    out.extend(step.element);
                    chunk = &chunk[step.consumed..];
                }
                Err(e) => return (out, Err(e)),
            }
        }
        rest = &rest[n..];
    }
    (out, s.finish())
}

fuzz_target!(|input: Input| {
    let max = usize::from(input.max_element).max(1);
    let whole = split(&input.body, &[], max);
    let cut = split(&input.body, &input.cuts, max);
    assert_eq!(whole, cut, "chunking changed the split");

    let table = TableName::new("p", "i", "t");
    for method in Method::ALL {
        if let Ok(request) = decode_request(method, &table, &input.body) {
            let json = encode_request(&request).expect("encode decoded request");
            let again = decode_request(method, &table, &json).expect("re-decode");
            assert_eq!(encode_request(&again).expect("re-encode"), json);
        }
        if let Ok(response) = decode_response(method, &input.body) {
            let json = encode_response(&response).expect("encode decoded response");
            assert_eq!(decode_response(method, &json).expect("re-decode"), response);
        }
        for element in &whole.0 {
            let _ = decode_stream_element(method, element);
        }
    }
    let _ = decode_error(400, &input.body);
});
