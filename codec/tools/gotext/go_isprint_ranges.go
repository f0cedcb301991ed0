// Prints the ranges of runes for which the installed Go's strconv.IsPrint is true, one
// "LO HI" hex pair a line: the reference make_isprint.py --go-reference cross-checks against.
//
//	go run codec/tools/gotext/go_isprint_ranges.go > /tmp/go-isprint.txt
package main

import (
	"fmt"
	"strconv"
	"unicode"
)

func main() {
	lo := rune(-1)
	for r := rune(0); r <= unicode.MaxRune+1; r++ {
		p := r <= unicode.MaxRune && strconv.IsPrint(r)
		if p && lo < 0 {
			lo = r
		} else if !p && lo >= 0 {
			fmt.Printf("%x %x\n", lo, r-1)
			lo = -1
		}
	}
}
