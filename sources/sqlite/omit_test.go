package sqlite_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// TestOmitUpdateBefore: a read with ReadOptions.OmitUpdateBefore returns
// the net changes without UPDATE_BEFORE — the same INSERT, UPDATE_AFTER
// and DELETE rows, in any order — and counts one omitted UPDATE_BEFORE
// per update (runner.OmittingReader); without it, UPDATE_BEFORE is read
// and nothing is omitted.
func TestOmitUpdateBefore(t *testing.T) {
	f := newFixture(t, "")
	info := f.orders()
	f.sql(`INSERT INTO orders VALUES (1, 'a', '1.00', 'x'), (2, 'b', '2.00', 'x'), (3, 'c', '3.00', 'x')`)
	rp := readOmitting(t, f, info, runner.ReadOptions{})
	if err := f.b.Advance(t.Context(), info, info.Offset, rp.point); err != nil {
		t.Fatal(err)
	}
	info = f.info("s")
	f.sql(`UPDATE orders SET status = 'y' WHERE id IN (1, 2)`)
	f.sql(`DELETE FROM orders WHERE id = 3`)
	f.sql(`INSERT INTO orders VALUES (4, 'd', '4.00', 'x')`)
	for _, tc := range []struct {
		omit        bool
		want        []string // op:id, sorted
		wantOmitted int64
	}{
		{false, []string{"DELETE:3", "INSERT:4", "UPDATE_AFTER:1", "UPDATE_AFTER:2", "UPDATE_BEFORE:1", "UPDATE_BEFORE:2"}, 0},
		{true, []string{"DELETE:3", "INSERT:4", "UPDATE_AFTER:1", "UPDATE_AFTER:2"}, 2},
	} {
		got := readOmitting(t, f, info, runner.ReadOptions{OmitUpdateBefore: tc.omit})
		if !slices.Equal(got.ops, tc.want) {
			t.Errorf("omit %t: read %q, want %q", tc.omit, got.ops, tc.want)
		}
		if n := got.omitted[cdc.OpUpdateBefore]; n != tc.wantOmitted {
			t.Errorf("omit %t: %d UPDATE_BEFORE omitted, want %d", tc.omit, n, tc.wantOmitted)
		}
		if got.point.String() == info.Offset.String() {
			t.Errorf("omit %t: read point %s did not move", tc.omit, got.point)
		}
	}
}

type readResult struct {
	ops     []string
	omitted map[cdc.Op]int64
	point   cdc.Offset
}

func readOmitting(t *testing.T, f *fixture, info *runner.StreamInfo, opt runner.ReadOptions) readResult {
	t.Helper()
	r, err := f.b.Changes(t.Context(), info, info.Offset, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out readResult
	for {
		b, err := r.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b {
			out.ops = append(out.ops, c.Op.String()+":"+fmtKey(c.Row[0]))
		}
	}
	sort.Strings(out.ops)
	if o, ok := r.(runner.OmittingReader); ok {
		out.omitted = o.Omitted()
	}
	out.point = r.ReadPoint()
	return out
}

func fmtKey(v any) string { return fmt.Sprint(v) }
