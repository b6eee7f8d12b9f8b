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

// evolve returns the statements that make the existing target t (named
// table in the job) follow ch (plan.SinkStage.Evolve: on_schema_change
// evolve), and t as it is after them (a copy); none and t when t already
// has every change (another run, or a person, made them). A new column is
// added with the type ColumnType gives the projected type (a PostgreSQL
// source's own type: jsonb stays jsonb), nullable and without a default,
// and the rows the target holds get what the source's rows that predate
// the column hold (plan.Fill): NULL; one value (FillValue), given as the
// ADD COLUMN's DEFAULT and dropped again by a second ALTER TABLE, so
// PostgreSQL keeps it as the column's missing value and rewrites nothing;
// or each row's value by key from the source table in this database
// (FillReread, an UPDATE … FROM after the ALTER). A widened column gets
// the wider type (ALTER COLUMN … TYPE: varchar and numeric precision
// widen in the catalog only, int to bigint rewrites the table under its
// ACCESS EXCLUSIVE lock). q turns a FillValue into a literal of the
// column's type (PostgreSQL's own text form of it). The statements run in
// the run's transaction, so a failed run leaves the target as it was.
func evolve(ctx context.Context, q Querier, table string, t *Table, ch []plan.ColumnChange, keys []string) ([]string, *Table, error) {
	if len(ch) == 0 || t == nil {
		return nil, t, nil
	}
	out := *t
	out.Columns = slices.Clone(t.Columns)
	var parts, drops, after []string
	for _, c := range ch {
		pgt := ColumnType(c.Type)
		_, native := LogicalType(pgt)
		i := slices.IndexFunc(out.Columns, func(o Column) bool { return strings.EqualFold(o.Name, c.Column) })
		switch {
		case i < 0:
			add := fmt.Sprintf("ADD COLUMN %s %s", Quote(c.Column), pgt)
			switch c.Fill.Kind {
			case plan.FillValue:
				lit, err := fillLiteral(ctx, q, c.Fill.Value, c.Type, pgt, native)
				if err != nil {
					return nil, nil, fmt.Errorf("postgres sink: the value %s of the new column %s of %s (the source's %s): %w", cdc.FormatValue(c.Fill.Value, c.Type), c.Column, Quote(table), c.Fill.Why, err)
				}
				add += " DEFAULT " + lit
				drops = append(drops, fmt.Sprintf("ALTER COLUMN %s DROP DEFAULT", Quote(c.Column)))
			case plan.FillReread:
				if c.Fill.Table == "" {
					break // filled by the run (runner.ColumnFiller, FillColumns)
				}
				on := make([]string, len(keys))
				for k, key := range keys {
					on[k] = fmt.Sprintf("d.%s = s.%s", Quote(key), Quote(key))
				}
				after = append(after, fmt.Sprintf("UPDATE %s d SET %s = s.%s FROM %s s WHERE %s",
					Quote(table), Quote(c.Column), Quote(c.Column), c.Fill.Table, strings.Join(on, " AND ")))
			}
			parts = append(parts, add)
			col := Column{PGType: pgt, Native: native}
			col.Name, col.Type = c.Column, c.Type
			out.Columns = append(out.Columns, col)
		case c.Widen && cdc.Widens(out.Columns[i].Type, c.Type):
			parts = append(parts, fmt.Sprintf("ALTER COLUMN %s TYPE %s", Quote(out.Columns[i].Name), pgt))
			out.Columns[i].PGType, out.Columns[i].Native, out.Columns[i].Type = pgt, native, c.Type
		}
	}
	if len(parts) == 0 {
		return nil, t, nil
	}
	stmts := []string{fmt.Sprintf("ALTER TABLE %s %s", Quote(table), strings.Join(parts, ", "))}
	if len(drops) > 0 {
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s %s", Quote(table), strings.Join(drops, ", ")))
	}
	return append(stmts, after...), &out, nil
}

// fillLiteral returns v (canonical, of logical type t) as a literal of
// the PostgreSQL type pgt ('7'::integer), in PostgreSQL's own text form
// of the value, which reads back as the same value.
func fillLiteral(ctx context.Context, q Querier, v any, t cdc.Type, pgt string, native bool) (string, error) {
	if v == nil {
		return "NULL::" + pgt, nil
	}
	param := "$1::" + pgt
	if !native {
		param = "$1::text::" + pgt
	}
	var text string
	if err := q.QueryRow(ctx, "SELECT ("+param+")::text", Encode(v, t)).Scan(&text); err != nil {
		return "", err
	}
	return Literal(text) + "::" + pgt, nil
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
