//! Hex and hand-rolled decimal digits for the row-key codecs: they write straight into the key
//! being built, where `format!` would go through `core::fmt` and an intermediate `String`.

use core::ops::{Div, Rem};

/// `%08x`: the 8 lowercase hex digits of `v`, most significant first.
pub(crate) fn hex8(v: u32) -> [u8; 8] {
    let mut out = [0u8; 8];
    // Four bytes always fill eight digits exactly: the length check cannot fail.
    let _ = hex::encode_to_slice(v.to_be_bytes(), &mut out);
    out
}

/// "00".."99": two decimal digits per table lookup halve the divisions.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `v` at the end of `out`, two per table lookup; returns where
/// they start. Generic so that a `u32` is divided in 32-bit arithmetic (cheaper than `u64`).
fn write_digits<T>(mut v: T, out: &mut [u8]) -> usize
where
    T: Copy + PartialOrd + From<u8> + Into<u64> + Div<Output = T> + Rem<Output = T>,
{
    let hundred = T::from(100);
    let mut i = out.len();
    while v >= hundred {
        let pair = (v % hundred).into() as usize * 2;
        v = v / hundred;
        i -= 2;
        out[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    let last = v.into() as usize;
    if last >= 10 {
        i -= 2;
        out[i..i + 2].copy_from_slice(&PAIRS[last * 2..last * 2 + 2]);
    } else {
        i -= 1;
        out[i] = b'0' + last as u8;
    }
    i
}

/// The decimal digits of `v`, written at the end of `buf`; returns them (`"0"` for 0).
pub(crate) fn decimal(v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let start = write_digits(v, buf);
    &buf[start..]
}

/// Appends the decimal digits of `v`, left-padded with `0` to at least `width` (`%0<width>d` of
/// a non-negative value).
pub(crate) fn push_decimal_padded(out: &mut alloc::vec::Vec<u8>, v: u64, width: usize) {
    let mut buf = [0u8; 20];
    let digits = decimal(v, &mut buf);
    out.extend(core::iter::repeat_n(
        b'0',
        width.saturating_sub(digits.len()),
    ));
    out.extend_from_slice(digits);
}

/// `%02d` of `v < 100`: one table lookup (callers check the bound).
pub(crate) fn two_digits(v: u8) -> [u8; 2] {
    let pair = usize::from(v % 100) * 2;
    [PAIRS[pair], PAIRS[pair + 1]]
}

/// `%010d` of a `u32`: every `u32` has at most ten digits, so the result has a fixed size.
pub(crate) fn ten_digits(v: u32) -> [u8; 10] {
    let mut out = [b'0'; 10];
    write_digits(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec::Vec;

    #[test]
    fn digits_match_core_fmt() {
        let mut values: Vec<u64> = (0..1200).collect();
        values.extend([
            9,
            10,
            99,
            100,
            999_999,
            1_000_000,
            u64::from(u32::MAX),
            u64::MAX,
        ]);
        values.extend((0..64).map(|s| 1u64 << s));
        values.extend((1..20).map(|p| 10u64.pow(p) - 1));
        for v in values {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(v, &mut buf), format!("{v}").as_bytes());
            let mut out = b"x".to_vec();
            push_decimal_padded(&mut out, v, 10);
            assert_eq!(out, format!("x{v:010}").into_bytes());
            let h = v as u32;
            assert_eq!(&hex8(h), format!("{h:08x}").as_bytes());
            assert_eq!(&ten_digits(h), format!("{h:010}").as_bytes());
            let small = (v % 100) as u8;
            assert_eq!(&two_digits(small), format!("{small:02}").as_bytes());
        }
    }
}
