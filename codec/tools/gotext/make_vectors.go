// Writes codec/tests/vectors/triples_gotext.json: predicates and triples whose text holds runes
// Go's strconv.Quote escapes (format and tag characters, unassigned code points, a flag emoji)
// or keeps raw, with every expected value computed here, in Go, independently of rowkit:
// strconv.Quote for the text, crypto/sha1 for the v5 UUIDs, crypto/sha256 and binary.Uvarint
// for the cell timestamps (triples.md 2.2, 2.5, 3.2, 3.3).
//
// The Go that runs it may be older than go 1.24 (Unicode 15.0.0), the original's: every rune
// of the inputs has the same IsPrint answer in both, except those of unicode15Printable,
// whose answer is Unicode 15.0.0's (checked by make_isprint.py's tables' source,
// unicodedata2 15.0.0) and which are quoted accordingly. Run once, from the repository root:
//
//	GO111MODULE=off go run codec/tools/gotext/make_vectors.go > codec/tests/vectors/triples_gotext.json
package main

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unicode"
)

// Runes printable in Unicode 15.0.0 (category L/M/N/P/S) but unassigned in older Go releases.
var unicode15Printable = map[rune]string{
	0x0870:  "ARABIC LETTER ALEF WITH ATTACHED FATHA, Lo, new in Unicode 14.0",
	0x11F00: "KAWI SIGN CANDRABINDU, Mn, new in Unicode 15.0",
}

// quote is go 1.24's strconv.Quote for the runes used here.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if _, ok := unicode15Printable[r]; ok {
			if strconv.IsPrint(r) {
				panic(fmt.Sprintf("%U is printable in this Go already: drop it from unicode15Printable", r))
			}
			b.WriteRune(r)
			continue
		}
		q := strconv.Quote(string(r))
		b.WriteString(q[1 : len(q)-1])
	}
	b.WriteByte('"')
	return b.String()
}

func uuid5(data []byte) [16]byte {
	h := sha1.Sum(append(make([]byte, 16), data...))
	var u [16]byte
	copy(u[:], h[:16])
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}

func uuidText(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// correctTimestamp is triples.md 3.3's CorrectTimestamp.
func correctTimestamp(ts int64) int64 {
	const maxValid = 253402300000000000
	ts = ts % maxValid
	if ts < 0 {
		ts = 0
	}
	if ts < 1000000 {
		ts *= 1000000
	}
	return ts - ts%1000
}

// object is one of the three kinds of triples.md 2.4, as text and UUID.
type object struct {
	text string
	uuid [16]byte
}

func node(typ, id string) object {
	return object{typ + "<" + id + ">", uuid5([]byte(typ + id))}
}

// predicate is an immutable predicate: its text, full UUID and partial UUID.
func predicate(id string) (object, [16]byte) {
	return object{quote(id) + "@[]", uuid5([]byte(id + "immutable"))}, uuid5([]byte(id))
}

func textLiteral(v string) object {
	return object{`"` + v + `"^^type:text`, uuid5([]byte(v))}
}

type predicateCase struct {
	Input       string `json:"input"`
	Text        string `json:"text"`
	ID          string `json:"id"`
	Immutable   bool   `json:"immutable"`
	UUID        string `json:"uuid"`
	PartialUUID string `json:"partial_uuid"`
}

type cell struct {
	Row    string `json:"row"`
	Column string `json:"column"`
}

type tripleCase struct {
	Input                string `json:"input"`
	Text                 string `json:"text"`
	Graph                string `json:"graph"`
	SubjectUUID          string `json:"subject_uuid"`
	PredicateUUID        string `json:"predicate_uuid"`
	PredicatePartialUUID string `json:"predicate_partial_uuid"`
	ObjectUUID           string `json:"object_uuid"`
	TripleUUID           string `json:"triple_uuid"`
	Family               string `json:"family"`
	TimestampMicros      int64  `json:"timestamp_micros"`
	Cells                []cell `json:"cells"`
	Sha256OfText         string `json:"sha256_of_text"`
	Source               string `json:"source"`
}

const source = "codec/tools/gotext/make_vectors.go"

func main() {
	flag := "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F" // Scotland
	ids := []struct{ id, what string }{
		{"a\u08E2b", "format character U+08E2"},
		{"a\u0890", "format character U+0890 (unassigned before Unicode 14, Cf since)"},
		{"x\U000110CDy", "format character U+110CD (supplementary)"},
		{"\U0001D173beam", "format character U+1D173"},
		{"tag\U000E0067", "tag character U+E0067"},
		{"\U000E0001lang", "language tag U+E0001"},
		{"gap\u0378", "unassigned code point U+0378"},
		{"gap\U000E0080", "unassigned code point U+E0080"},
		{"flag " + flag, "subdivision flag emoji (U+1F3F4, tags, U+E007F)"},
		{"kawi\U00011F00", "U+11F00, printable from Unicode 15.0 (raw)"},
		{"caf\u00e9 \u0870 \u00a0\u00ad", "printable (é; U+0870, from Unicode 14.0) and not (U+00A0, U+00AD)"},
	}
	var out struct {
		Meta       map[string]interface{} `json:"meta"`
		Predicates []predicateCase        `json:"predicates"`
		Triples    []tripleCase           `json:"triples"`
	}
	out.Meta = map[string]interface{}{
		"system": "BadWolf triple store: predicate text escaping (Go strconv.Quote, Unicode 15.0.0)",
		"spec":   "triples.md",
		"source": map[string]string{
			"generator": source,
			"go":        runtime.Version() + " (Unicode " + unicode.Version + ") strconv.Quote, for runes whose IsPrint is the same in Unicode 15.0.0",
			"unicode15": "runes printable only from Unicode 15.0.0 are kept raw (unicode15Printable)",
		},
		"encoding_notes": []string{
			"same shape as ../shared/vectors/triples.json's predicates and triples",
			"predicate 'input' holds the runes raw; 'text' is Go's %q of the id, the cell value's predicate part",
		},
		"set": "rowkit",
	}
	for _, c := range ids {
		p, partial := predicate(c.id)
		// Raw runes in the input: Unquote keeps them; the text escapes what Go escapes.
		out.Predicates = append(out.Predicates, predicateCase{
			Input: `"` + c.id + `"@[]`, Text: p.text, ID: c.id, Immutable: true,
			UUID: uuidText(p.uuid), PartialUUID: uuidText(partial),
		})
		// The escaped text parses to the same predicate.
		out.Predicates = append(out.Predicates, predicateCase{
			Input: p.text, Text: p.text, ID: c.id, Immutable: true,
			UUID: uuidText(p.uuid), PartialUUID: uuidText(partial),
		})
	}
	joe := node("/u", "joe")
	objects := []struct {
		o    object
		what string
	}{
		{node("/u", "mary"), "node object"},
		{textLiteral("flag " + flag), "text literal (never escaped)"},
	}
	flagPredicate, _ := predicate("flag " + flag)
	objects = append(objects, struct {
		o    object
		what string
	}{flagPredicate, "predicate object"})
	for i, c := range ids {
		p, partial := predicate(c.id)
		o := objects[i%len(objects)]
		text := joe.text + "\t" + p.text + "\t" + o.o.text
		// The input writes the predicate with its runes raw.
		input := joe.text + "\t\"" + c.id + "\"@[]\t" + o.o.text
		sum := sha256.Sum256([]byte(text))
		n, width := binary.Uvarint(sum[:])
		if width <= 0 {
			n = 0
		}
		ts := correctTimestamp(int64(n))
		tripleUUID := uuid5(append(append(append([]byte{}, joe.uuid[:]...), p.uuid[:]...), o.o.uuid[:]...))
		s, pp, ob := uuidText(joe.uuid), uuidText(partial), uuidText(o.o.uuid)
		g := "test"
		out.Triples = append(out.Triples, tripleCase{
			Input: input, Text: text, Graph: g,
			SubjectUUID: s, PredicateUUID: uuidText(p.uuid), PredicatePartialUUID: pp,
			ObjectUUID: ob, TripleUUID: uuidText(tripleUUID), Family: "immutable_triple",
			TimestampMicros: ts,
			Cells: []cell{
				{g + ":OSP:" + ob + ":" + s + ":" + pp, "immutable_triple:SP"},
				{g + ":POS:" + pp + ":" + ob + ":" + s, "immutable_triple:OS"},
				{g + ":SOP:" + s + ":" + ob + ":" + pp, "immutable_triple:OP"},
				{g + ":SPO:" + s + ":" + pp + ":" + ob, "immutable_triple:PO"},
			},
			Sha256OfText: hex.EncodeToString(sum[:]),
			Source:       source + ": " + c.what + ", " + o.what,
		})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
