//! SHA-1 (FIPS 180-4), used only for the name-based v5 UUIDs of the BadWolf data model.
//!
//! Written here rather than pulled in as a dependency: it has to build `no_std` for wasm, and
//! UUIDv5 is the only use; SHA-1 is not used for anything security-relevant. The 80 rounds are
//! unrolled by macro with a 16-word rolling message schedule, and [`Sha1`] hashes its input in
//! parts, so a UUID's `namespace ‖ name` is never copied into one buffer.

/// The SHA-1 digest of `data`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(data);
    h.finish()
}

/// An incremental SHA-1: [`update`](Sha1::update) any number of parts, then
/// [`finish`](Sha1::finish).
#[derive(Clone)]
pub(crate) struct Sha1 {
    state: [u32; 5],
    /// The bytes of the current, incomplete block.
    block: [u8; 64],
    /// How many bytes of `block` are filled.
    filled: usize,
    /// Bytes hashed so far.
    total: u64,
}

impl Sha1 {
    /// The initial state.
    pub(crate) fn new() -> Sha1 {
        Sha1 {
            state: [
                0x6745_2301,
                0xEFCD_AB89,
                0x98BA_DCFE,
                0x1032_5476,
                0xC3D2_E1F0,
            ],
            block: [0; 64],
            filled: 0,
            total: 0,
        }
    }

    /// Hashes `data` after what came before.
    pub(crate) fn update(&mut self, mut data: &[u8]) {
        self.total = self.total.wrapping_add(data.len() as u64);
        if self.filled > 0 {
            let take = (64 - self.filled).min(data.len());
            self.block[self.filled..self.filled + take].copy_from_slice(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled < 64 {
                return;
            }
            compress(&mut self.state, &self.block);
            self.filled = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            let mut b = [0u8; 64];
            b.copy_from_slice(block);
            compress(&mut self.state, &b);
        }
        let rest = blocks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    /// The digest. Padding: 0x80, zeros, then the 64-bit big-endian bit length, in one or two
    /// blocks.
    pub(crate) fn finish(mut self) -> [u8; 20] {
        let bit_len = self.total.wrapping_mul(8);
        self.block[self.filled] = 0x80;
        self.block[self.filled + 1..].fill(0);
        if self.filled >= 56 {
            compress(&mut self.state, &self.block);
            self.block = [0; 64];
        }
        self.block[56..].copy_from_slice(&bit_len.to_be_bytes());
        compress(&mut self.state, &self.block);
        let mut out = [0u8; 20];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

/// Word `i` of the message schedule, kept in a ring of 16: rounds 16..80 compute theirs from
/// the four words 3, 8, 14 and 16 rounds back.
#[inline(always)]
fn schedule(w: &mut [u32; 16], i: usize) -> u32 {
    if i < 16 {
        return w[i];
    }
    let x = (w[(i + 13) & 15] ^ w[(i + 8) & 15] ^ w[(i + 2) & 15] ^ w[i & 15]).rotate_left(1);
    w[i & 15] = x;
    x
}

/// The round functions with their constants added.
#[inline(always)]
fn ch(b: u32, c: u32, d: u32) -> u32 {
    (d ^ (b & (c ^ d))).wrapping_add(0x5A82_7999)
}
#[inline(always)]
fn parity1(b: u32, c: u32, d: u32) -> u32 {
    (b ^ c ^ d).wrapping_add(0x6ED9_EBA1)
}
#[inline(always)]
fn maj(b: u32, c: u32, d: u32) -> u32 {
    ((b & c) | (d & (b | c))).wrapping_add(0x8F1B_BCDC)
}
#[inline(always)]
fn parity3(b: u32, c: u32, d: u32) -> u32 {
    (b ^ c ^ d).wrapping_add(0xCA62_C1D6)
}

/// One round, with the variables renamed instead of moved: `e` takes the new `a`, `b` is rotated
/// in place; the next round is called with `(e, a, b, c, d)`.
macro_rules! round {
    ($w:ident, $i:expr, $f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident) => {
        $e = $e
            .wrapping_add($a.rotate_left(5))
            .wrapping_add($f($b, $c, $d))
            .wrapping_add(schedule(&mut $w, $i));
        $b = $b.rotate_left(30);
    };
}

/// Five rounds, after which the variables are back in their places.
macro_rules! five_rounds {
    ($w:ident, $i:expr, $f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident) => {
        round!($w, $i, $f, $a, $b, $c, $d, $e);
        round!($w, $i + 1, $f, $e, $a, $b, $c, $d);
        round!($w, $i + 2, $f, $d, $e, $a, $b, $c);
        round!($w, $i + 3, $f, $c, $d, $e, $a, $b);
        round!($w, $i + 4, $f, $b, $c, $d, $e, $a);
    };
}

fn compress(h: &mut [u32; 5], block: &[u8; 64]) {
    let mut w = [0u32; 16];
    for (word, chunk) in w.iter_mut().zip(block.chunks_exact(4)) {
        *word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *h;
    five_rounds!(w, 0, ch, a, b, c, d, e);
    five_rounds!(w, 5, ch, a, b, c, d, e);
    five_rounds!(w, 10, ch, a, b, c, d, e);
    five_rounds!(w, 15, ch, a, b, c, d, e);
    five_rounds!(w, 20, parity1, a, b, c, d, e);
    five_rounds!(w, 25, parity1, a, b, c, d, e);
    five_rounds!(w, 30, parity1, a, b, c, d, e);
    five_rounds!(w, 35, parity1, a, b, c, d, e);
    five_rounds!(w, 40, maj, a, b, c, d, e);
    five_rounds!(w, 45, maj, a, b, c, d, e);
    five_rounds!(w, 50, maj, a, b, c, d, e);
    five_rounds!(w, 55, maj, a, b, c, d, e);
    five_rounds!(w, 60, parity3, a, b, c, d, e);
    five_rounds!(w, 65, parity3, a, b, c, d, e);
    five_rounds!(w, 70, parity3, a, b, c, d, e);
    five_rounds!(w, 75, parity3, a, b, c, d, e);
    for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
        *x = x.wrapping_add(y);
    }
}

#[cfg(test)]
mod tests {
    use super::sha1;

    fn hex(b: &[u8]) -> alloc::string::String {
        b.iter().map(|x| alloc::format!("{x:02x}")).collect()
    }

    #[test]
    fn known_digests() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(hex(&sha1(long)), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
        let million = alloc::vec![b'a'; 1_000_000];
        // The same input in uneven parts, across block boundaries.
        let mut h = super::Sha1::new();
        for part in million.chunks(997) {
            h.update(part);
        }
        assert_eq!(hex(&h.finish()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
        assert_eq!(
            hex(&sha1(&million)),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
    }

    /// Lengths around the padding boundaries (55/56 bytes: one or two final blocks), hashed
    /// whole and in two parts at every split; digests from Python's `hashlib`.
    #[test]
    fn padding_boundaries() {
        let known = [
            (55, "749bbefb28edc4638b28b2b9a9e03ab9a4032b90"),
            (56, "a5b6e9c29d201c774753ff8e7fb64931656f5e63"),
            (63, "d1a454409359fc372b4d22b3cea6488d6ba1be00"),
            (64, "39a0d8b645ad85f1f976731ed112ac9455e28b78"),
            (65, "d0c96e18890114a14716e9686528d2e3fdba8d9e"),
            (119, "562ecf8a430f8e1056e3619bae33628e9a1d0a4e"),
            (120, "353f6d2bf0e91aa91b74a2e0b3f297510f7d825f"),
            (128, "0060f2a7e34b6e4d459f560197ef93243732a400"),
        ];
        for (n, want) in known {
            let data: alloc::vec::Vec<u8> = (0..n).map(|i| ((i * 31 + 7) % 256) as u8).collect();
            assert_eq!(hex(&sha1(&data)), want, "{n} bytes");
            for split in 0..=n {
                let mut h = super::Sha1::new();
                h.update(&data[..split]);
                h.update(&data[split..]);
                assert_eq!(hex(&h.finish()), want, "{n} bytes split at {split}");
            }
        }
    }
}
