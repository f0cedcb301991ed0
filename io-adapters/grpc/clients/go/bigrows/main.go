// Command bigrows writes a row holding one 2 MiB cell and a row of 1 500 cells of 1 KiB through
// Google's Go client, then reads them back through the Go client and through `cbt lookup`,
// comparing every byte with what it wrote. Both rows are larger than the 1 MiB a server may put in
// one chunk, so they pass only if the server streams them as production does: a row never spans
// two ReadRowsResponses (the Go client and cbt reject that as "invalid state for end of stream").
//
// It reaches the server as users do, through BIGTABLE_EMULATOR_HOST (so with gRPC's default 4 MiB
// receive limit, which production's responses respect). Usage: bigrows PROJECT INSTANCE TABLE.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigtable"
)

const (
	family       = "cf"
	bigCellRow   = "big-cell"
	bigCellBytes = 2 << 20
	wideRow      = "wide-row"
	wideCells    = 1500
	wideCellSize = 1 << 10
)

// pattern returns n printable bytes that differ from one seed to the next, so a cell swapped,
// truncated or shifted by a chunking bug does not compare equal.
func pattern(seed string, n int) []byte {
	out := make([]byte, 0, n+32)
	for i := 0; len(out) < n; i++ {
		out = append(out, fmt.Sprintf("%s.%d;", seed, i)...)
	}
	return out[:n]
}

func qualifier(i int) string { return fmt.Sprintf("q%04d", i) }

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bigrows PROJECT INSTANCE TABLE (BIGTABLE_EMULATOR_HOST set)")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "bigrows:", err)
		os.Exit(1)
	}
}

func run(project, instance, table string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := bigtable.NewAdminClient(ctx, project, instance)
	if err != nil {
		return fmt.Errorf("admin client: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTable(ctx, table); err != nil {
		return fmt.Errorf("CreateTable: %v", err)
	}
	if err := admin.CreateColumnFamily(ctx, table, family); err != nil {
		return fmt.Errorf("CreateColumnFamily: %v", err)
	}
	client, err := bigtable.NewClient(ctx, project, instance)
	if err != nil {
		return fmt.Errorf("data client: %v", err)
	}
	defer client.Close()
	tbl := client.Open(table)

	want := map[string]map[string][]byte{
		bigCellRow: {"big": pattern("big", bigCellBytes)},
		wideRow:    {},
	}
	for i := 0; i < wideCells; i++ {
		want[wideRow][qualifier(i)] = pattern(qualifier(i), wideCellSize)
	}
	for row, cells := range want {
		mut := bigtable.NewMutation()
		for q, v := range cells {
			mut.Set(family, q, 1000, v)
		}
		if err := tbl.Apply(ctx, row, mut); err != nil {
			return fmt.Errorf("Apply %s: %v", row, err)
		}
	}

	for row := range want {
		got, err := tbl.ReadRow(ctx, row)
		if err != nil {
			return fmt.Errorf("Go ReadRow %s: %v", row, err)
		}
		if err := compare("Go ReadRow", row, got, want[row]); err != nil {
			return err
		}
	}
	scanned := 0
	var scanErr error
	err = tbl.ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
		scanErr = compare("Go ReadRows scan", r.Key(), r, want[r.Key()])
		scanned++
		return scanErr == nil
	})
	if err != nil {
		return fmt.Errorf("Go ReadRows scan: %v", err)
	}
	if scanErr != nil {
		return scanErr
	}
	if scanned != len(want) {
		return fmt.Errorf("Go ReadRows scan: %d rows, want %d", scanned, len(want))
	}
	fmt.Printf("bigrows: Go client read back a %d-byte cell and a row of %d cells of %d bytes (ReadRow and a scan)\n",
		bigCellBytes, wideCells, wideCellSize)

	for row, cells := range want {
		if err := cbtLookup(project, instance, table, row, cells); err != nil {
			return err
		}
	}
	fmt.Println("bigrows: cbt lookup read back both rows intact")
	return nil
}

// compare checks that a row read back holds exactly the cells written, each once.
func compare(how, key string, got bigtable.Row, want map[string][]byte) error {
	if want == nil {
		return fmt.Errorf("%s: unexpected row %q", how, key)
	}
	items := got[family]
	if len(items) != len(want) {
		return fmt.Errorf("%s %s: %d cells, want %d", how, key, len(items), len(want))
	}
	for _, it := range items {
		q := strings.TrimPrefix(it.Column, family+":")
		if !bytes.Equal(it.Value, want[q]) {
			return fmt.Errorf("%s %s: cell %s has %d bytes that differ from the %d written", how, key, q, len(it.Value), len(want[q]))
		}
	}
	return nil
}

// cbtLookup runs `cbt lookup` and checks its printout: each cell's column line followed by the
// value as Go's %q prints it.
func cbtLookup(project, instance, table, row string, want map[string][]byte) error {
	// Without -creds, cbt asks gcloud for credentials (seconds per call) that it then does not
	// use with BIGTABLE_EMULATOR_HOST; an empty key file skips that.
	creds, err := os.CreateTemp("", "bigrows-creds-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(creds.Name())
	if _, err := creds.WriteString("{}"); err != nil {
		return err
	}
	creds.Close()
	cmd := exec.Command("cbt", "-project", project, "-instance", instance, "-creds", creds.Name(), "lookup", table, row)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("cbt lookup %s: %v: %s", row, err, lastLine(stderr.String()))
	}
	lines := strings.Split(string(out), "\n")
	seen := 0
	for i := 0; i+1 < len(lines); i++ {
		fields := strings.Fields(lines[i])
		if len(fields) == 0 || !strings.HasPrefix(fields[0], family+":") {
			continue
		}
		q := strings.TrimPrefix(fields[0], family+":")
		v, ok := want[q]
		if !ok {
			return fmt.Errorf("cbt lookup %s: unexpected column %s", row, fields[0])
		}
		if strings.TrimSpace(lines[i+1]) != strconv.Quote(string(v)) {
			return fmt.Errorf("cbt lookup %s: column %s: value differs from the %d bytes written", row, q, len(v))
		}
		seen++
	}
	if seen != len(want) {
		return fmt.Errorf("cbt lookup %s: %d cells printed, want %d", row, seen, len(want))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
