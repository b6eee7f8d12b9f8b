package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// openDB opens a fresh file database with sluice's pragmas.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sqlitex.Open(context.Background(), sqlitex.Location{Path: filepath.Join(t.TempDir(), "sink.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// orders is the seed's projected schema.
var orders = cdc.Schema{Columns: []cdc.Column{
	{Name: "id", Type: cdc.TypeInt},
	{Name: "name", Type: cdc.TypeString},
	{Name: "amount", Type: cdc.Decimal(10, 2)},
	{Name: "status", Type: cdc.TypeString},
}}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// ch builds a full-row change.
func ch(op cdc.Op, ver int64, row ...any) cdc.Change {
	return cdc.Change{Op: op, CommitVersion: ver, CommitTime: time.Unix(1705312800, 0).UTC(), Row: row}
}

// partial builds a partial change carrying the columns whose mask byte is '1'.
func partial(op cdc.Op, ver int64, mask string, row ...any) cdc.Change {
	c := ch(op, ver, row...)
	c.Present = make([]bool, len(mask))
	for i := range mask {
		c.Present[i] = mask[i] == '1'
	}
	return c
}

func stage(table string, mode plan.Mode, keys []string, s cdc.Schema) *plan.SinkStage {
	s.Key = keys
	return &plan.SinkStage{Backend: "sqlite", Table: table, Mode: mode, Keys: keys, Schema: s}
}

func cpAt(pos string) runner.Checkpoint {
	return runner.Checkpoint{Stream: "orders_stream", StreamID: "sid-1", Offset: cdc.SingleOffset(pos)}
}

// runBatches prepares st, writes the batches in one transaction and commits
// with checkpoint cp.
func runBatches(t *testing.T, db *sql.DB, st *plan.SinkStage, cp runner.Checkpoint, batches ...[]cdc.Change) (runner.Stats, error) {
	t.Helper()
	ctx := context.Background()
	sp, err := New(db, nil).PrepareSink(ctx, st)
	if err != nil {
		return runner.Stats{}, err
	}
	tx, err := sp.Begin(ctx, "job1")
	if err != nil {
		return runner.Stats{}, err
	}
	defer tx.Rollback(ctx)
	for _, b := range batches {
		if err := tx.Write(ctx, b); err != nil {
			return runner.Stats{}, err
		}
	}
	return tx.Commit(ctx, cp)
}

// dump returns the table's rows as text ordered by orderBy: each value as
// SQLite stores it (NULL, integers, text), joined with '|'.
func dump(t *testing.T, db *sql.DB, table, orderBy string) []string {
	t.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT * FROM %s ORDER BY %s", sqlitex.Quote(table), orderBy))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = string(x)
			default:
				parts[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkRows(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n got  %q\n want %q", got, want)
	}
}

func storedOffset(t *testing.T, db *sql.DB, job string) string {
	t.Helper()
	cp, ok, err := ReadCheckpoint(context.Background(), db, job)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return cp.Offset.String()
}
