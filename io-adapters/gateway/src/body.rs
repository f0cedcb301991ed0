//! Request bodies judged as they arrive: the size limit applies to the bytes read so far, and
//! a byte that no JSON request body can have at its place rejects the body there, so an
//! invalid upload of hundreds of megabytes costs one chunk of memory, not its whole size.

/// Longest run of number or literal characters accepted outside strings: no field of a
/// Bigtable request needs more (int64 values travel as strings).
const MAX_BARE_RUN: usize = 1024;
/// Deepest nesting accepted (`serde_json` itself stops at 128).
const MAX_DEPTH: usize = 256;

/// A lenient JSON syntax screen for an object body: it never rejects valid JSON, and rejects
/// what is invalid as early as bytes allow it cheaply (a body that does not start with `{`, a
/// control character inside a string, a byte that cannot appear outside strings, unbalanced
/// brackets, anything after the closing brace). What it lets through is judged by the full
/// decoder afterwards.
#[derive(Debug, Default)]
pub(crate) struct JsonScreen {
    offset: u64,
    depth: usize,
    started: bool,
    in_string: bool,
    escaped: bool,
    bare_run: usize,
}

/// Why [`JsonScreen::feed`] rejected a body: the byte and its offset.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotJson {
    /// Offset of the byte from the body's start.
    pub offset: u64,
    /// The byte.
    pub byte: u8,
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.byte.is_ascii_graphic() {
            format!("{:?}", self.byte as char)
        } else {
            format!("byte 0x{:02x}", self.byte)
        };
        // Worded as the decoder's own errors (Google's), which judge what this screen passes.
        write!(
            f,
            "Invalid JSON payload received. Unexpected {what} at offset {}",
            self.offset
        )?;
        if self.offset == 0 {
            f.write_str(": expected a JSON object")?;
        }
        Ok(())
    }
}

impl JsonScreen {
    /// Screens the next bytes of the body.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<(), NotJson> {
        for &byte in chunk {
            if !self.accepts(byte) {
                return Err(NotJson {
                    offset: self.offset,
                    byte,
                });
            }
            self.offset += 1;
        }
        Ok(())
    }

    fn accepts(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
            } else if byte < 0x20 {
                return false;
            }
            return true;
        }
        if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            self.bare_run = 0;
            return true;
        }
        let closed = self.started && self.depth == 0;
        if closed || (!self.started && byte != b'{') {
            return false;
        }
        self.started = true;
        match byte {
            b'{' | b'[' => {
                self.bare_run = 0;
                self.depth += 1;
                self.depth <= MAX_DEPTH
            }
            b'}' | b']' => {
                self.bare_run = 0;
                self.depth -= 1;
                true
            }
            b'"' => {
                self.bare_run = 0;
                self.in_string = true;
                true
            }
            b':' | b',' => {
                self.bare_run = 0;
                true
            }
            b'0'..=b'9'
            | b'-'
            | b'+'
            | b'.'
            | b'e'
            | b'E'
            | b't'
            | b'r'
            | b'u'
            | b'f'
            | b'a'
            | b'l'
            | b's'
            | b'n' => {
                self.bare_run += 1;
                self.bare_run <= MAX_BARE_RUN
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(body: &[u8]) -> Result<(), NotJson> {
        JsonScreen::default().feed(body)
    }

    fn screen_split(body: &[u8]) -> Result<(), NotJson> {
        let mut s = JsonScreen::default();
        body.iter()
            .try_for_each(|b| s.feed(std::slice::from_ref(b)))
    }

    #[test]
    fn valid_bodies_pass_whole_and_byte_by_byte() {
        let bodies: [&[u8]; 5] = [
            br#"{}"#,
            br#" {"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"cf","timestampMicros":"-1","value":"djE="}}]} "#,
            br#"{"a":[1,-2.5e+10,true,false,null,{"b":"\"\\\u00e9 {[,"}]}"#,
            "{\"k\":\"caf\u{e9} \u{1F600}\"}\r\n".as_bytes(),
            br#"{"filter":{"chain":{"filters":[{"familyNameRegexFilter":"^cf$"},{"cellsPerColumnLimitFilter":1}]}}}"#,
        ];
        for body in bodies {
            assert_eq!(screen(body), Ok(()), "{}", String::from_utf8_lossy(body));
            assert_eq!(screen_split(body), Ok(()));
            // The screen agrees with a real parser on each of them.
            assert!(serde_json::from_slice::<serde_json::Value>(body).is_ok());
        }
    }

    #[test]
    fn invalid_bytes_are_found_where_they_are() {
        let at = |body: &[u8]| screen(body).map_err(|e| (e.offset, e.byte));
        assert_eq!(at(&[0u8; 64]), Err((0, 0)));
        assert_eq!(at(b"[1]"), Err((0, b'[')));
        assert_eq!(at(b"{\"a\":\"x\0\"}"), Err((7, 0)));
        assert_eq!(at(b"{\"a\":1}{"), Err((7, b'{')));
        assert_eq!(at(b"{\"a\":#}"), Err((5, b'#')));
        let mut long_number = b"{\"a\":".to_vec();
        long_number.extend(std::iter::repeat_n(b'1', 2000));
        assert_eq!(at(&long_number), Err((5 + MAX_BARE_RUN as u64, b'1')));
        let deep = vec![b'['; 300];
        let mut deep_body = b"{\"a\":".to_vec();
        deep_body.extend(deep);
        assert!(at(&deep_body).is_err());
    }
}
