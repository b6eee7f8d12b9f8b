package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/conformance"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// harness runs the conformance suite on a fresh database file per test.
var harness = conformance.Harness{
	Open:    openTemp,
	Apply:   apply,
	LogRows: logRows,
}

func TestStreamConformance(t *testing.T) { conformance.RunStreamSuite(t, harness) }

func openTemp(t *testing.T) runner.Backend {
	t.Helper()
	b, err := runner.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "test.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// apply writes ops with parameterized SQL in one write transaction,
// encoding values per the storage conventions.
func apply(t *testing.T, b runner.Backend, ops ...conformance.Op) {
	t.Helper()
	ctx := t.Context()
	err := sqlitex.WithImmediate(ctx, b.(*sqlite.Backend).DB(), func(tx *sqlitex.Tx) error {
		for _, op := range ops {
			s, ok, err := sqlitex.TableSchema(ctx, tx, op.Table)
			if err != nil || !ok {
				t.Fatalf("table %s: %v", op.Table, err)
			}
			var q string
			var args []any
			enc := func(col string, v any) any {
				c, _ := s.Column(col)
				e, err := sqlitex.Encode(v, c.Type)
				if err != nil {
					t.Fatalf("encode %s: %v", col, err)
				}
				return e
			}
			where := func() string {
				var w []string
				for i, k := range s.Key {
					w = append(w, sqlitex.Quote(k)+" = ?")
					args = append(args, enc(k, op.Key[i]))
				}
				return strings.Join(w, " AND ")
			}
			switch op.Kind {
			case conformance.OpInsert:
				var ph []string
				for i, c := range s.Columns {
					ph = append(ph, "?")
					args = append(args, enc(c.Name, op.Row[i]))
				}
				q = "INSERT INTO " + sqlitex.Quote(op.Table) + " VALUES (" + strings.Join(ph, ", ") + ")"
			case conformance.OpUpdate:
				var set []string
				for _, a := range op.Set {
					set = append(set, sqlitex.Quote(a.Column)+" = ?")
					args = append(args, enc(a.Column, a.Value))
				}
				q = "UPDATE " + sqlitex.Quote(op.Table) + " SET " + strings.Join(set, ", ")
				q += " WHERE " + where()
			case conformance.OpDelete:
				q = "DELETE FROM " + sqlitex.Quote(op.Table)
				q += " WHERE " + where()
			}
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%s: %d rows affected, want 1", q, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func logRows(t *testing.T, b runner.Backend, table string) int {
	t.Helper()
	var n int
	err := b.(*sqlite.Backend).DB().QueryRowContext(t.Context(), "SELECT count(*) FROM "+sqlitex.Quote("sluice_changes_"+table)).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
