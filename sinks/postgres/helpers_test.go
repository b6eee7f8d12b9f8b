package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func exec(t *testing.T, p *pgxpool.Pool, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := p.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func ch(op cdc.Op, ver int64, row ...any) cdc.Change {
	return cdc.Change{Op: op, CommitVersion: ver, CommitTime: time.Unix(0, 0).UTC(), Row: row}
}

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
	return &plan.SinkStage{Backend: "postgres", Table: table, Mode: mode, Keys: keys, Schema: s}
}

func cpAt(pos string) runner.Checkpoint {
	return runner.Checkpoint{Stream: "s", StreamID: "id1", Offset: cdc.SingleOffset(pos)}
}

// runBatches runs one sink transaction over the batches and commits.
func runBatches(t *testing.T, sk *Sink, st *plan.SinkStage, cp runner.Checkpoint, batches ...[]cdc.Change) (runner.Stats, error) {
	t.Helper()
	ctx := context.Background()
	p, err := sk.PrepareSink(ctx, st)
	if err != nil {
		return runner.Stats{}, err
	}
	tx, err := p.Begin(ctx, "job1")
	if err != nil {
		return runner.Stats{}, err
	}
	for _, b := range batches {
		if err := tx.Write(ctx, b); err != nil {
			_ = tx.Rollback(ctx)
			return runner.Stats{}, err
		}
	}
	return tx.Commit(ctx, cp)
}

// dump returns the rows of table as text, ordered by orderBy.
func dump(t *testing.T, p *pgxpool.Pool, table, orderBy string) []string {
	t.Helper()
	rows, err := p.Query(context.Background(), fmt.Sprintf("SELECT * FROM %s ORDER BY %s", Quote(table), orderBy))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			d, err := Decode(v, cdc.Type{Kind: cdc.KindDecimal, Precision: 38, Scale: 10})
			if err == nil {
				if x, ok := d.(decimal.Decimal); ok {
					parts[i] = x.String()
					continue
				}
			}
			if v == nil {
				parts[i] = "NULL"
			} else if tm, ok := v.(time.Time); ok {
				parts[i] = tm.UTC().Format(time.RFC3339Nano)
			} else {
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

func checkRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}
