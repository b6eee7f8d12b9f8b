package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// constantDefault matches a DEFAULT that is one constant (what SQLite's
// ALTER TABLE … ADD COLUMN accepts: a literal, a signed number, NULL,
// TRUE, FALSE), as PRAGMA table_info reports it; CURRENT_TIMESTAMP and
// parenthesized expressions are per row.
var constantDefault = regexp.MustCompile(`(?is)^\s*(?:[-+]?\s*(?:[0-9][0-9_]*(?:\.[0-9_]*)?(?:e[-+]?[0-9_]+)?|\.[0-9_]+(?:e[-+]?[0-9_]+)?|0x[0-9a-f_]+)|'(?:[^']|'')*'|x'[0-9a-f]*'|null|true|false)\s*$`)

// AddedColumn implements runner.AddedColumnSource: what the rows of s's
// table that predate column col hold in it. SQLite's ALTER TABLE … ADD
// COLUMN takes only a constant DEFAULT, which every row written before it
// reads (https://www.sqlite.org/lang_altertable.html#altertabaddcol):
// plan.FillValue with that constant, converted to the column's type as a
// read converts a stored value (sqlitex.Decode); plan.FillNull without a
// DEFAULT. A generated column, or a DEFAULT that is not one constant
// (CURRENT_TIMESTAMP, an expression: a column the table had from its
// creation), has a value per row: plan.FillReread with the table's quoted
// name (Fill.Table is that name whatever the kind). Errors: col is not a
// column of the table, or the catalog read's.
func (b *Backend) AddedColumn(ctx context.Context, s *runner.StreamInfo, col string) (plan.Fill, error) {
	var dflt sql.NullString
	var hidden int
	err := b.db.QueryRowContext(ctx, `SELECT dflt_value, hidden FROM pragma_table_xinfo(?) WHERE name = ?`, s.Table, col).Scan(&dflt, &hidden)
	if err == sql.ErrNoRows {
		return plan.Fill{}, fmt.Errorf("%s has no column %s", sqlitex.Quote(s.Table), sqlitex.Quote(col))
	}
	if err != nil {
		return plan.Fill{}, fmt.Errorf("read column %s of %s: %w", sqlitex.Quote(col), sqlitex.Quote(s.Table), err)
	}
	reread := plan.Fill{Kind: plan.FillReread, Table: sqlitex.Quote(s.Table)}
	switch {
	case hidden >= 2:
		reread.Why = "generated column"
		return reread, nil
	case !dflt.Valid:
		return plan.Fill{Kind: plan.FillNull, Table: reread.Table, Why: "ADD COLUMN without DEFAULT"}, nil
	case !constantDefault.MatchString(dflt.String):
		reread.Why = "DEFAULT " + dflt.String + " (a value per row)"
		return reread, nil
	}
	var raw any
	if err := b.db.QueryRowContext(ctx, "SELECT "+dflt.String).Scan(&raw); err != nil {
		return plan.Fill{}, fmt.Errorf("read the DEFAULT %s of column %s of %s: %w", dflt.String, sqlitex.Quote(col), sqlitex.Quote(s.Table), err)
	}
	c, ok := s.TableSchema.Column(col)
	if !ok {
		return plan.Fill{}, fmt.Errorf("%s has no column %s", sqlitex.Quote(s.Table), sqlitex.Quote(col))
	}
	v, err := sqlitex.Decode(raw, c.Type)
	if err != nil {
		return plan.Fill{}, fmt.Errorf("the DEFAULT %s of column %s of %s: %w", dflt.String, sqlitex.Quote(col), sqlitex.Quote(s.Table), err)
	}
	if v == nil {
		return plan.Fill{Kind: plan.FillNull, Table: reread.Table, Why: "ADD COLUMN … DEFAULT NULL"}, nil
	}
	return plan.Fill{Kind: plan.FillValue, Value: v, Table: reread.Table, Why: "ADD COLUMN … DEFAULT " + strings.TrimSpace(dflt.String)}, nil
}
