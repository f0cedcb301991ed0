#!/usr/bin/env python3
"""Writes codec/src/triples/isprint.rs: Go's `strconv.IsPrint` tables for Unicode 15.0.0.

BadWolf's text forms are Go `strconv.Quote` output (spec triples.md 2.2), which escapes every
rune for which Go's `unicode.IsPrint` is false. The original declares go 1.24, whose `unicode`
package is Unicode 15.0.0, so the tables must be that version's, built as Go builds them:
IsPrint = general category L, M, N, P or S, or U+0020. The layout and the scan are those of
Go's `strconv/makeisprint.go` (isPrint16 / isNotPrint16 ranges and exceptions below U+10000,
isPrint32 / isNotPrint32 above), so the ~3 KB of tables read like Go's `isprint.go`.
(`isGraphic`, the other table of that file, serves `QuoteToGraphic`, which BadWolf never calls.)

Usage (from the repository root):

    pip install unicodedata2==15.0.0
    python3 codec/tools/gotext/make_isprint.py [--go-reference FILE]

`--go-reference FILE` cross-checks against the ranges printed by `go run
codec/tools/gotext/go_isprint_ranges.go` (the Go installed, e.g. 1.19 = Unicode 13): every
rune printable there must be printable here (Unicode never unassigns a character nor, between
13 and 15, moved one from L/M/N/P/S out of them), and the runes printable only here must be
unassigned in that older version, which the script checks against Python's own `unicodedata`
when it is older than 15 but not older than the Go one's.
"""

import argparse
import os
import subprocess
import sys

import unicodedata2

UNICODE_VERSION = "15.0.0"
MAX_RUNE = 0x10FFFF
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "src", "triples", "isprint.rs")


def is_print(r):
    """Go 1.24's unicode.IsPrint: categories L, M, N, P, S, plus ASCII space."""
    if r == 0x20:
        return True
    if 0xD800 <= r <= 0xDFFF:
        return False
    return unicodedata2.category(chr(r))[0] in "LMNPS"


def scan(lo_rune, hi_rune, printable):
    """makeisprint.go's scan: ranges of printable runes; a lone non-printable rune between
    two printable ones is an exception inside a range rather than a range break."""
    ranges, excepts = [], []
    lo = -1
    i = lo_rune
    while True:
        if (i > hi_rune or not printable[i]) and lo >= 0:
            if i + 1 <= hi_rune and printable[i + 1]:
                excepts.append(i)
                i += 1
                continue
            ranges += [lo, i - 1]
            lo = -1
        if i > hi_rune:
            break
        if lo < 0 and printable[i]:
            lo = i
        i += 1
    return ranges, excepts


def lookup(r, range16, except16, range32, except32):
    """The Rust lookup, written again: the tables must reproduce IsPrint for every rune."""
    import bisect

    if r < 0x10000:
        rang, exc, x = range16, except16, r
    else:
        rang, exc, x = range32, except32, r
    i = bisect.bisect_left(rang, x)
    if i >= len(rang) or x < rang[i & ~1] or rang[i | 1] < x:
        return False
    if r >= 0x20000:
        return True
    if r >= 0x10000:
        x = r - 0x10000
    j = bisect.bisect_left(exc, x)
    return j >= len(exc) or exc[j] != x


def cross_check(path, printable):
    older = [False] * (MAX_RUNE + 1)
    with open(path) as f:
        for line in f:
            a, b = (int(x, 16) for x in line.split())
            for r in range(a, b + 1):
                older[r] = True
    lost = [r for r in range(MAX_RUNE + 1) if older[r] and not printable[r]]
    if lost:
        sys.exit("printable in the Go reference but not in %s: %s" % (UNICODE_VERSION, ["%04X" % r for r in lost[:20]]))
    gained = [r for r in range(MAX_RUNE + 1) if printable[r] and not older[r]]
    import unicodedata

    # Python's own database, when between the two, must have every gained rune unassigned or
    # newly assigned; with a database older than the Go one it says nothing, so only count.
    assigned_before = [r for r in gained if unicodedata.category(chr(r)) != "Cn" and r != 0x20]
    print("cross-check: %d runes printable in both, %d only in %s (new characters); "
          "%d of those already assigned in Python's unicodedata %s"
          % (sum(older), len(gained), UNICODE_VERSION, len(assigned_before), unicodedata.unidata_version))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-reference")
    ap.add_argument("--output", default=OUT)
    args = ap.parse_args()
    if unicodedata2.unidata_version != UNICODE_VERSION:
        sys.exit("need unicodedata2 %s (pip install unicodedata2==%s), have %s"
                 % (UNICODE_VERSION, UNICODE_VERSION, unicodedata2.unidata_version))
    printable = [is_print(r) for r in range(MAX_RUNE + 1)]
    range16, except16 = scan(0, 0xFFFF, printable)
    range32, except32 = scan(0x10000, MAX_RUNE, printable)
    assert all(r < 0x20000 for r in except32), "an exception above U+1FFFF does not fit in u16"
    except32 = [r - 0x10000 for r in except32]
    for r in range(MAX_RUNE + 1):
        assert lookup(r, range16, except16, range32, except32) == printable[r], hex(r)
    if args.go_reference:
        cross_check(args.go_reference, printable)

    size = (len(range16) + len(except16) + len(except32)) * 2 + len(range32) * 4
    out = []
    w = out.append
    w("//! Go's `strconv` printable-rune tables for Unicode %s (go 1.24's), in the layout of Go's\n" % UNICODE_VERSION)
    w("//! `strconv/isprint.go`: %d bytes.\n" % size)
    w("//!\n")
    w("//! Generated by `python3 codec/tools/gotext/make_isprint.py` from unicodedata2 %s; do not\n" % UNICODE_VERSION)
    w("//! edit.\n\n")

    def table(name, doc, ty, values, per_line, width):
        w("/// %s\n" % doc)
        w("pub(super) static %s: [%s; %d] = [\n" % (name, ty, len(values)))
        for k in range(0, len(values), per_line):
            w("    " + " ".join("0x%0*x," % (width, v) for v in values[k:k + per_line]) + "\n")
        w("];\n\n")

    table("IS_PRINT16", "Pairs `[lo, hi]` of printable ranges below U+10000.", "u16", range16, 8, 4)
    table("IS_NOT_PRINT16", "Non-printable runes inside the `IS_PRINT16` ranges.", "u16", except16, 8, 4)
    table("IS_PRINT32", "Pairs `[lo, hi]` of printable ranges from U+10000.", "u32", range32, 6, 6)
    table("IS_NOT_PRINT32", "Non-printable runes inside the `IS_PRINT32` ranges, minus 0x10000 (all below U+20000).", "u16", except32, 8, 4)
    with open(args.output, "w") as f:
        f.write("".join(out).rstrip("\n") + "\n")
    # The layout `cargo fmt` keeps, so regenerating changes nothing.
    subprocess.run(["rustfmt", "--edition", "2024", args.output], check=True)
    print("wrote %s: %d + %d + %d + %d entries, %d bytes" % (
        args.output, len(range16), len(except16), len(range32), len(except32), size))


if __name__ == "__main__":
    main()
