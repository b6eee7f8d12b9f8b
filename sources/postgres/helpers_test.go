package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openDB opens a backend on a fresh database.
func openDB(t *testing.T) (*Backend, string) {
	t.Helper()
	u := pgtest.NewDatabase(t)
	b, err := Open(context.Background(), u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, u
}

// connect opens a session of its own on u, closed when the test ends
// (closing it earlier is allowed).
func connect(ctx context.Context, t *testing.T, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func sqlExec(t *testing.T, b *Backend, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := b.pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func track(t *testing.T, b *Backend, table string) {
	t.Helper()
	if err := b.EnableTracking(context.Background(), table); err != nil {
		t.Fatal(err)
	}
}

func mkStream(t *testing.T, b *Backend, name, table, mode string, initial bool) {
	t.Helper()
	if err := b.CreateStream(context.Background(), &dsl.CreateStream{Stream: name, Table: table, Mode: mode, ShowInitialRows: initial}); err != nil {
		t.Fatal(err)
	}
}

// fmtChange renders "OP v1 v2 …".
func fmtChange(c cdc.Change, s cdc.Schema) string {
	parts := []string{c.Op.String()}
	for i, v := range c.Row {
		parts = append(parts, cdc.FormatValue(v, s.Columns[i].Type))
	}
	return strings.Join(parts, " ")
}

// read reads stream name from its offset; with consume it advances.
func read(t *testing.T, b *Backend, name string, consume bool) ([]cdc.Change, []string) {
	t.Helper()
	ctx := context.Background()
	s, err := b.Stream(ctx, plan.Source{Stream: name})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Changes(ctx, s, s.Offset, runner.ReadOptions{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	var all []cdc.Change
	for {
		batch, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if consume {
		if err := b.Advance(ctx, s, s.Offset, r.ReadPoint()); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, c := range all {
		out = append(out, fmtChange(c, s.TableSchema))
	}
	return all, out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// tableRows returns the rows of q (two columns) as "c1 c2".
func tableRows(t *testing.T, b *Backend, q string) []string {
	t.Helper()
	return tableRowsAll(t, b, q)
}

// tableRowsAll returns the rows of q, every column, as "c1 c2 …" in the
// form fmtChange gives a change's values.
func tableRowsAll(t *testing.T, b *Backend, q string) []string {
	t.Helper()
	rs, err := b.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs.Rows {
		parts := make([]string, len(r))
		for i, v := range r {
			parts[i] = cdc.FormatValue(v, rs.Columns[i].Type)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}
