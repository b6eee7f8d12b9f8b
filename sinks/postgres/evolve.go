package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
)

// evolve returns the one ALTER TABLE that makes the existing target t
// (named table in the job)
// follow ch (plan.SinkStage.Evolve: on_schema_change evolve), and t as it
// is after it (a copy); "" and t when t already has every change (another
// run, or a person, made them). A new column is added with the type
// ColumnType gives the projected type (a PostgreSQL source's own type:
// jsonb stays jsonb), nullable and without a default, so rows written
// before it hold NULL; a widened column gets the wider type
// (ALTER COLUMN … TYPE: varchar and numeric precision widen in the
// catalog only, int to bigint rewrites the table under its ACCESS
// EXCLUSIVE lock). It runs in the run's transaction, so a failed run
// leaves the target as it was.
func evolve(table string, t *Table, ch []plan.ColumnChange) (string, *Table) {
	if len(ch) == 0 || t == nil {
		return "", t
	}
	out := *t
	out.Columns = slices.Clone(t.Columns)
	var parts []string
	for _, c := range ch {
		pgt := ColumnType(c.Type)
		_, native := LogicalType(pgt)
		i := slices.IndexFunc(out.Columns, func(o Column) bool { return strings.EqualFold(o.Name, c.Column) })
		switch {
		case i < 0:
			parts = append(parts, fmt.Sprintf("ADD COLUMN %s %s", Quote(c.Column), pgt))
			col := Column{PGType: pgt, Native: native}
			col.Name, col.Type = c.Column, c.Type
			out.Columns = append(out.Columns, col)
		case c.Widen && cdc.Widens(out.Columns[i].Type, c.Type):
			parts = append(parts, fmt.Sprintf("ALTER COLUMN %s TYPE %s", Quote(out.Columns[i].Name), pgt))
			out.Columns[i].PGType, out.Columns[i].Native, out.Columns[i].Type = pgt, native, c.Type
		}
	}
	if len(parts) == 0 {
		return "", t
	}
	return fmt.Sprintf("ALTER TABLE %s %s", Quote(table), strings.Join(parts, ", ")), &out
}

// describeEvolve lists ch in words ("add column c BIGINT; widen …").
func describeEvolve(ch []plan.ColumnChange) string {
	out := make([]string, len(ch))
	for i, c := range ch {
		out[i] = c.String()
	}
	return strings.Join(out, "; ")
}

// copyShapeSetting is the session setting that records, per connection,
// the shape (copyShape) of the table the sink last COPYed into.
const copyShapeSetting = "sluice.copy_shape"

// copyShape is a short digest of what a COPY of c writes into: the
// staging table's definition, or the target's columns and types.
func (c *compiled) copyShape() string {
	h := sha256.New()
	if c.stage != "" {
		h.Write([]byte(c.stage))
	} else {
		for _, col := range c.target.Columns {
			fmt.Fprintf(h, "%s %s\n", col.Name, col.PGType)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// forgetStaleCopy makes the COPYs of this run describe their table again
// when its shape changed since this connection last COPYed (a widened
// column, or a target altered by hand). pgx caches the description of
// COPY's "select cols from table" per connection by its text, which does
// not change with the types: a COPY after a column went from integer to
// bigint would encode for the old type and fail (client-side, with no
// server error to invalidate the cache) on every run of the connection.
// The shape is kept in a session setting of the connection (reverted with
// a rolled-back transaction); a different one deallocates the
// connection's statements.
func forgetStaleCopy(ctx context.Context, tx pgx.Tx, c *compiled) error {
	var stale bool
	if err := tx.QueryRow(ctx, `SELECT coalesce(current_setting('`+copyShapeSetting+`', true), '') NOT IN ('', $1), set_config('`+copyShapeSetting+`', $1, false) IS NOT NULL`,
		c.copyShape()).Scan(&stale, new(bool)); err != nil {
		return fmt.Errorf("postgres sink: %w", err)
	}
	if !stale {
		return nil
	}
	if err := tx.Conn().DeallocateAll(ctx); err != nil {
		return fmt.Errorf("postgres sink: forget cached statements after the target changed: %w", err)
	}
	return nil
}
