package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// AddedColumn implements runner.AddedColumnSource: what the rows of s's
// table that predate column col hold in it, read from the catalog in one
// read-only transaction.
//
//   - The column's missing value (pg_attribute.attmissingval, kept by
//     PostgreSQL 11+ for an ADD COLUMN with a non-volatile DEFAULT, and
//     read by every row written before it whatever SET DEFAULT came
//     later): plan.FillValue with that value, decoded as a read of the
//     column decodes it (missingLiterals: its text form, read back exactly).
//   - No missing value and no DEFAULT, identity or generation expression
//     (ADD COLUMN without DEFAULT): plan.FillNull.
//   - Otherwise (a volatile DEFAULT — random(), clock_timestamp(),
//     serial, gen_random_uuid() — that rewrote the table with a value per
//     row; an identity or generated column; a missing value cleared by a
//     rewrite since, such as VACUUM FULL): plan.FillReread.
//
// Fill.Table is the table's schema-qualified name whatever the kind (the
// planner may read by key a column it suspects renamed).
//
// Errors: the table is not tracked (ErrNotTracked), col is not a column of
// it, or the catalog read's.
func (b *Backend) AddedColumn(ctx context.Context, s *runner.StreamInfo, col string) (plan.Fill, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return plan.Fill{}, b.wrap(err, "read column %s of %s", sinkpg.Quote(col), sinkpg.Quote(s.Table))
	}
	defer func() { _ = tx.Rollback(ctx) }()
	t, ok, err := b.tracked(ctx, tx, s.Table)
	if err != nil {
		return plan.Fill{}, err
	}
	if !ok {
		return plan.Fill{}, fmt.Errorf("%w: %s (stream %s)", ErrNotTracked, sinkpg.Quote(s.Table), s.Name)
	}
	var c *sinkpg.Column
	for i := range t.Table.Columns {
		if t.Table.Columns[i].Name == col {
			c = &t.Table.Columns[i]
		}
	}
	if c == nil {
		return plan.Fill{}, fmt.Errorf("%s has no column %s", sinkpg.Quote(t.Table.Name), sinkpg.Quote(col))
	}
	ref, err := tableRef(ctx, tx, t)
	if err != nil {
		return plan.Fill{}, b.wrap(err, "name %s", sinkpg.Quote(t.Table.Name))
	}
	var missing bool
	var def, identity, generated string
	if err := tx.QueryRow(ctx, `SELECT a.atthasmissing, coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity::text, a.attgenerated::text
		FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attname = $2 AND NOT a.attisdropped`, t.Relid, col).Scan(&missing, &def, &identity, &generated); err != nil {
		return plan.Fill{}, b.wrap(err, "read column %s of %s", sinkpg.Quote(col), sinkpg.Quote(t.Table.Name))
	}
	if missing {
		lits, err := missingLiterals(ctx, tx, t)
		if err != nil {
			return plan.Fill{}, b.wrap(err, "read the missing value of column %s of %s", sinkpg.Quote(col), sinkpg.Quote(t.Table.Name))
		}
		if lit, ok := lits[col]; ok {
			var raw any
			if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT %s FROM (SELECT %s AS %s) m", c.Select("m."), lit, sinkpg.Quote(col))).Scan(&raw); err != nil {
				return plan.Fill{}, b.wrap(err, "read the missing value of column %s of %s", sinkpg.Quote(col), sinkpg.Quote(t.Table.Name))
			}
			v, err := sinkpg.Decode(raw, c.Type)
			if err != nil {
				return plan.Fill{}, fmt.Errorf("the missing value of column %s of %s: %w", sinkpg.Quote(col), sinkpg.Quote(t.Table.Name), err)
			}
			kind := plan.FillValue
			if v == nil {
				kind = plan.FillNull
			}
			return plan.Fill{Kind: kind, Value: v, Table: ref, Why: "ADD COLUMN … DEFAULT " + strings.TrimSuffix(lit, "::"+c.PGType)}, nil
		}
	}
	why := ""
	switch {
	case identity != "":
		why = "identity column"
	case generated != "":
		why = "generation expression " + def
	case def != "":
		why = "DEFAULT " + def + " (a value per row)"
	default:
		return plan.Fill{Kind: plan.FillNull, Table: ref, Why: "ADD COLUMN without DEFAULT"}, nil
	}
	return plan.Fill{Kind: plan.FillReread, Table: ref, Why: why}, nil
}

// FillsColumns marks the PostgreSQL sink as one whose transactions fill
// columns by key (runner.ColumnFiller, sinks/postgres Tx.FillColumns).
func (b *Backend) FillsColumns() bool { return true }
