package runner

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/pos"
)

// ExecScript parses text (statements of the dialect, as `sluice sql -f`
// reads them; name is the file name for error positions) and executes them
// in order on conn ("" = the default connection). each, when not nil, is
// called with every statement's result set (nil for statements that return
// no rows). The first failing statement stops the script; its error carries
// the statement's position. A missing SQLite database is created (the
// one place sluice creates a database that is not a sink: `sluice sql`).
func (r *Runner) ExecScript(ctx context.Context, conn, name, text string, each func(dsl.Statement, *ResultSet) error) error {
	stmts, err := dsl.ParseStatements(name, text)
	if err != nil {
		return err
	}
	b, err := r.Backend(WithCreate(ctx, CreateAll), conn)
	if err != nil {
		return err
	}
	ex, ok := b.(Executor)
	if !ok {
		return fmt.Errorf("%s connections do not execute statements", b.Scheme())
	}
	for _, st := range stmts {
		rs, err := ex.Exec(ctx, st)
		if err != nil {
			return pos.Errorf(st.Position(), "%w", err)
		}
		if each != nil {
			if err := each(st, rs); err != nil {
				return err
			}
		}
	}
	return nil
}
