package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// onlyChecksOf reports whether the target's CHECK constraints are all the
// DECIMAL checks sluice creates (sqlitex.DecimalCheckSQL) on the columns
// cols (indexes into SinkStage.Schema): the table's SQL holds no other
// CHECK. A write whose values in those columns already pass the check may
// then run without the constraints (ignoreChecks).
func (t *Tx) onlyChecksOf(ctx context.Context, cols []int) (bool, error) {
	var ddl string
	err := t.q.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", t.p.st.Table).Scan(&ddl)
	if err != nil {
		return false, fmt.Errorf("sqlite sink: read the definition of %q: %w", t.p.st.Table, err)
	}
	for _, i := range cols {
		name := t.p.st.Schema.Columns[i].Name
		if tc, ok := t.target.Column(name); ok {
			name = tc.Name
		}
		ddl = strings.ReplaceAll(ddl, sqlitex.DecimalCheckSQL(name), "")
	}
	return !strings.Contains(strings.ToUpper(ddl), "CHECK"), nil
}

// ignoreChecks sets PRAGMA ignore_check_constraints on the transaction's
// connection and returns the function that sets it back (an error of
// which drops the connection: it never goes back to the pool without its
// checks). Statements compiled meanwhile are expired by the pragma and
// compile again with the checks.
func (t *Tx) ignoreChecks(ctx context.Context) (restore func() error, err error) {
	if _, err := t.q.ExecContext(ctx, "PRAGMA ignore_check_constraints = ON"); err != nil {
		return nil, fmt.Errorf("sqlite sink: %w", err)
	}
	return func() error {
		if _, err := t.q.ExecContext(context.WithoutCancel(ctx), "PRAGMA ignore_check_constraints = OFF"); err != nil {
			conn := t.conn
			if conn == nil {
				conn, _ = t.q.(*sql.Conn) // Attach's
			}
			if conn != nil {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			return fmt.Errorf("sqlite sink: %w", err)
		}
		return nil
	}, nil
}
