package sqlite_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

// TestEmptyReadKeepsOffset: a run that finds no change after a consuming
// run hands back the offset it read from, anchor and all — the log row the
// anchor names is purged by then, and a bare "<seq>" would count as a
// moved offset (the run history records those) — on the pushed-down path
// (target in the same file) and through sluice (another file).
func TestEmptyReadKeepsOffset(t *testing.T) {
	for _, tc := range []struct{ name, sink string }{
		{"pushdown", ""},
		{"other file", ", connection: 'sqlite:OTHER'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "src.db")
			f := newFixture(t, "sqlite:"+path)
			f.orders()
			f.sql(`INSERT INTO orders (id, name, amount, status) VALUES (1, 'a', 1, 'new')`)
			sink := tc.sink
			if sink != "" {
				sink = ", connection: 'sqlite:" + filepath.Join(dir, "other.db") + "'"
			}
			job, err := dsl.ParseJob("j.yaml", []byte("name: j\nsource: s\nsink: {table: tgt, mode: merge, keys: [id]"+sink+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: "sqlite:" + path}
			defer r.Close()
			ctx := runner.WithCreate(t.Context(), runner.CreateAll)
			first, err := r.RunJob(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			if first.From.String() == first.To.String() {
				t.Fatalf("the consuming run did not move the offset: %s", first.To)
			}
			for i := range 2 {
				res, err := r.RunJob(ctx, job)
				if err != nil {
					t.Fatal(err)
				}
				if res.From.String() != first.To.String() || res.To.String() != first.To.String() {
					t.Errorf("empty run %d: offset %s -> %s, want %s -> %s (unchanged)", i+1, res.From, res.To, first.To, first.To)
				}
			}
		})
	}
}
