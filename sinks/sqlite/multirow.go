package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// maxVariables is SQLite's default limit on the parameters of one
// statement (SQLITE_MAX_VARIABLE_NUMBER since 3.32.0,
// https://www.sqlite.org/limits.html#max_variable_number).
const maxVariables = 32766

// maxRowsPerInsert bounds the rows of one multi-row INSERT: beyond a few
// hundred the statement's compilation and its argument slice grow while
// the per-statement cost it saves is already small.
const maxRowsPerInsert = 256

// rowsPerInsert is how many rows of ncols columns one INSERT writes.
func rowsPerInsert(ncols int) int {
	return max(1, min(maxRowsPerInsert, maxVariables/max(ncols, 1)))
}

// writeRows inserts a batch of an append-like mode with multi-row INSERT
// statements (INSERT … VALUES (…), (…), …; rowsPerInsert rows each,
// prepared once per size), so that a row costs one set of bound values
// rather than one statement execution through database/sql. Values are
// encoded as Write says. When a statement fails for a value (a
// constraint), SQLite has undone the whole statement; its rows are then
// inserted one by one, so that the error names the row.
func (t *Tx) writeRows(ctx context.Context, batch []cdc.Change) error {
	cols := t.p.st.Schema.Columns
	per := rowsPerInsert(len(cols))
	args := make([]any, 0, min(len(batch), per)*len(cols))
	for start := 0; start < len(batch); start += per {
		rows := batch[start:min(start+per, len(batch))]
		args = args[:0]
		for bi := range rows {
			ch := &rows[bi]
			if len(ch.Row) != len(cols) || (ch.Present != nil && len(ch.Present) != len(cols)) {
				return fmt.Errorf("sqlite sink: row has %d values for %d columns", len(ch.Row), len(cols))
			}
			var err error
			if args, err = t.appendValues(args, ch); err != nil {
				return err
			}
		}
		err := t.insertRows(ctx, len(rows), args)
		if err != nil && sqlitex.IsValueError(err) && len(rows) > 1 {
			// name the row: one by one (the failed statement left nothing)
			for bi := range rows {
				one := args[bi*len(cols) : (bi+1)*len(cols)]
				if err := t.insert(ctx, one); err != nil {
					return t.insertError(err, &rows[bi])
				}
				t.written[rows[bi].Op]++
			}
			continue
		}
		if err != nil {
			if len(rows) == 1 {
				return t.insertError(err, &rows[0])
			}
			return fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, err)
		}
		for bi := range rows {
			t.written[rows[bi].Op]++
		}
	}
	return nil
}

func (t *Tx) insertError(err error, ch *cdc.Change) error {
	if !sqlitex.IsValueError(err) {
		// A full disk or a read-only file is no fault of the row:
		// its values stay out of the error (and of the run history).
		return fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, err)
	}
	return fmt.Errorf("sqlite sink: write %q (%s): %w", t.p.st.Table, cdc.RowLabel(ch, t.p.st.Schema, t.keyIdx, t.keyName), err)
}

// insertRows runs the INSERT of n rows with args (n × columns values).
func (t *Tx) insertRows(ctx context.Context, n int, args []any) error {
	if n == 1 {
		return t.insert(ctx, args)
	}
	q := multiInsertSQL(t.c.insert, n)
	pc, ok := t.q.(interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	})
	if !ok {
		_, err := t.q.ExecContext(ctx, q, args...)
		return err
	}
	st := t.multi[n]
	if st == nil {
		var err error
		if st, err = pc.PrepareContext(ctx, q); err != nil {
			return err
		}
		if t.multi == nil {
			t.multi = map[int]*sql.Stmt{}
		}
		t.multi[n] = st
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

// multiInsertSQL turns the one-row INSERT … VALUES (?, …) into one of n
// rows.
func multiInsertSQL(one string, n int) string {
	i := strings.LastIndex(one, " VALUES ")
	row := one[i+len(" VALUES "):]
	var b strings.Builder
	b.Grow(len(one) + (n-1)*(len(row)+2))
	b.WriteString(one)
	for range n - 1 {
		b.WriteString(", ")
		b.WriteString(row)
	}
	return b.String()
}

// closeMulti closes the prepared multi-row statements.
func (t *Tx) closeMulti() {
	for _, st := range t.multi {
		st.Close()
	}
	for _, st := range t.copyMulti {
		st.Close()
	}
	t.multi, t.copyMulti = nil, nil
}
