package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// prices has a composite key whose DECIMAL part is stored as text, so its
// key order ("-1.00" < "10.00" < "9.50") is not numeric order.
func (f *fixture) prices() *runner.StreamInfo {
	f.t.Helper()
	f.exec(&dsl.CreateTable{Table: "prices", Schema: cdc.Schema{Columns: []cdc.Column{
		{Name: "price", Type: cdc.Decimal(10, 2), NotNull: true}, {Name: "tag", Type: cdc.TypeString, NotNull: true}, {Name: "n", Type: cdc.TypeInt},
	}, Key: []string{"price", "tag"}}})
	f.exec(&dsl.SetChangeTracking{Table: "prices", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "s", Table: "prices"})
	for i, p := range []string{"9.50", "10.00", "-1.00", "100.25", "9.50", "0.00", "10.00"} {
		f.sql(`INSERT INTO prices VALUES (?, ?, ?)`, p, fmt.Sprintf("t%d ✓", i%3+i), i)
	}
	return f.info("s")
}

func keyText(ch cdc.Change) string {
	return cdc.FormatValue(ch.Row[0], cdc.Decimal(10, 2)) + "/" + ch.Row[1].(string)
}

// readAll pages through a snapshot in chunks of n.
func readAll(t *testing.T, s runner.SnapshotReader, after []any, n int) []string {
	t.Helper()
	var out []string
	for {
		rows, err := s.Chunk(t.Context(), after, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Op != cdc.OpInsert {
				t.Fatalf("op %s", r.Op)
			}
			out = append(out, keyText(r))
		}
		if len(rows) < n {
			return out
		}
		after = []any{rows[len(rows)-1].Row[0], rows[len(rows)-1].Row[1]}
	}
}

func TestSnapshotKeysetScan(t *testing.T) {
	f := newFixture(t, "")
	info := f.prices()
	ctx := t.Context()
	// The rows the snapshot holds, read before it opens (it holds the
	// file's one read connection until it closes).
	var want []string
	rows, err := f.b.DB().QueryContext(ctx, `SELECT price, tag FROM prices ORDER BY price, tag`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p, tg string
		_ = rows.Scan(&p, &tg)
		want = append(want, p+"/"+tg)
	}
	rows.Close()
	s, err := f.b.Snapshot(ctx, info, info.Offset)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Changes after the snapshot opened are not in it.
	f.sql(`INSERT INTO prices VALUES ('5.00', 'late', 99)`)
	f.sql(`UPDATE prices SET n = 42 WHERE price = '9.50'`)
	if n, err := s.Count(ctx); err != nil || n != 7 {
		t.Fatalf("count = %d, %v", n, err)
	}
	for _, n := range []int{1, 2, 3, 7, 100} {
		if got := readAll(t, s, nil, n); !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: %v, want %v", n, got, want)
		}
	}
	first, _ := s.Chunk(ctx, nil, 7)
	for _, r := range first {
		if r.Row[2] == int64(42) {
			t.Fatalf("update after the snapshot is visible: %v", r.Row)
		}
	}
	// The offset is consistent with the rows: a stream read from it
	// returns exactly the two later changes.
	off := s.Offset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rd, err := f.b.Changes(ctx, info, off, runner.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rd.Next(ctx)
	rd.Close()
	if fmt.Sprint(ops(got)) != "[INSERT UPDATE_BEFORE UPDATE_AFTER UPDATE_BEFORE UPDATE_AFTER]" {
		t.Fatalf("changes after the snapshot offset: %v", ops(got))
	}
	// A new snapshot resumes after a canonical key (the encoded path).
	s2, err := f.b.Snapshot(ctx, f.info("s"), off)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	after := []any{first[2].Row[0], first[2].Row[1]}
	if got := readAll(t, s2, after, 2); len(got) != 5 || got[0] != want[3] {
		t.Fatalf("resumed after %v: %v", after, got)
	}
}

func TestSnapshotCatchupByKey(t *testing.T) {
	f := newFixture(t, "")
	info := f.prices()
	ctx := t.Context()
	s1, err := f.b.Snapshot(ctx, info, info.Offset)
	if err != nil {
		t.Fatal(err)
	}
	o1 := s1.Offset()
	s1.Close()
	// Key order: -1.00, 0.00, 10.00 ×2, 100.25, 9.50 ×2; copied up to 10.00/t1.
	upTo := []any{decimal.RequireFromString("10.00"), "t1 ✓"}
	f.sql(`UPDATE prices SET n = 1000 WHERE price = '0.00'`)   // below: caught up
	f.sql(`DELETE FROM prices WHERE price = '-1.00'`)          // below: caught up
	f.sql(`UPDATE prices SET n = 2000 WHERE price = '100.25'`) // above: not
	f.sql(`INSERT INTO prices VALUES ('11.00', 'x', 1)`)       // above ("11.00" > "10.00")
	s2, err := f.b.Snapshot(ctx, f.info("s"), o1)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rd, err := s2.Catchup(ctx, upTo, runner.ReadOptions{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b {
			got = append(got, c.Op.String()+" "+keyText(c))
		}
	}
	rd.Close()
	if !rd.ReadPoint().Equal(s2.Offset()) {
		t.Errorf("read point %s, want the snapshot's %s", rd.ReadPoint(), s2.Offset())
	}
	want := []string{"UPDATE_BEFORE 0.00/t7 ✓", "UPDATE_AFTER 0.00/t7 ✓", "DELETE -1.00/t4 ✓"}
	if !slices.Equal(got, want) {
		t.Fatalf("catch-up = %q, want %q", got, want)
	}
	// The snapshot is still usable after the catch-up reader closed.
	if n, err := s2.Count(ctx); err != nil || n != 7 {
		t.Fatalf("count after catch-up = %d, %v", n, err)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	f := newFixture(t, "")
	ctx := t.Context()
	f.sql(`CREATE TABLE nokey (a INT)`)
	f.exec(&dsl.SetChangeTracking{Table: "nokey", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "a", Table: "nokey", Mode: "APPEND_ONLY"})
	if _, err := f.b.Snapshot(ctx, f.info("a"), cdc.Offset{}); !errors.Is(err, sqlite.ErrNoPrimaryKey) {
		t.Errorf("table without a key: err = %v", err)
	}
	// SQLite lets a non-INTEGER primary key column hold NULL; a keyset
	// scan cannot page past it, so the chunk fails naming the key.
	f.sql(`CREATE TABLE nullkey (name TEXT, v INT, PRIMARY KEY (name))`)
	f.sql(`INSERT INTO nullkey VALUES (NULL, 1), ('b', 2)`)
	f.exec(&dsl.SetChangeTracking{Table: "nullkey", Enabled: true})
	f.exec(&dsl.CreateStream{Stream: "n", Table: "nullkey"})
	s, err := f.b.Snapshot(ctx, f.info("n"), cdc.Offset{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Chunk(ctx, nil, 10); err == nil || !strings.Contains(err.Error(), "name=<nil>") || !strings.Contains(err.Error(), "NULL") {
		t.Errorf("NULL key: err = %v", err)
	}
	s.Close()
	// Cancelling the context ends the snapshot's transaction.
	c, cancel := context.WithCancel(ctx)
	s3, err := f.b.Snapshot(c, f.info("n"), cdc.Offset{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s3.Count(c); err == nil {
		t.Error("count on a cancelled snapshot succeeded")
	}
	if err := s3.Close(); err != nil {
		t.Errorf("close after cancel: %v", err)
	}
}
