package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.CopySinkTx = (*Tx)(nil)

// copyTextFormat is the COPY text format a SQLite target loads: PostgreSQL's
// text format (sources/postgres.CopyFormat, under its copySettings: ISO
// dates, floats that read back exactly).
const copyTextFormat = "postgres"

// TargetEmpty reports whether the target has no row, in the transaction
// (runner.CopySinkTx).
func (t *Tx) TargetEmpty(ctx context.Context) (bool, error) {
	var empty bool
	if err := t.q.QueryRowContext(ctx, "SELECT NOT EXISTS (SELECT 1 FROM "+sqlitex.Quote(t.p.st.Table)+")").Scan(&empty); err != nil {
		return false, fmt.Errorf("sqlite sink: is %q empty: %w", t.p.st.Table, err)
	}
	return empty, nil
}

// AcceptCopy implements runner.CopySinkTx: the target takes PostgreSQL COPY
// text ("postgres") when every projected column has a reader from its
// source type to the target column's storage form (copyReader: the value
// sqlitex.Encode stores for the same value decoded from PostgreSQL), and
// the mode writes the rows as they come: append, overwrite, errorifexists
// or ignore, or merge (not a SQL MERGE INTO, not soft deletes) when newKeys
// says no key is in the target yet (the rows are then inserted as they
// are). Otherwise it says why (the rows then go through sluice).
func (t *Tx) AcceptCopy(ctx context.Context, format string, types []string, newKeys bool) (bool, string, error) {
	st := t.p.st
	if why := runner.CopyRefusal(st, format, copyTextFormat, len(types), len(st.Schema.Columns)); why != "" {
		return false, why, nil
	}
	switch {
	case !t.owned || t.err != nil || t.done:
		return false, "the transaction cannot load COPY text", nil
	case st.Mode == plan.ModeMerge && !newKeys:
		return false, "a merge into a target that had rows", nil
	case st.Mode != plan.ModeMerge && t.c.apply != nil:
		return false, fmt.Sprintf("mode %s stages its rows", st.Mode), nil
	}
	readers := make([]copyReader, len(types))
	for i, c := range st.Schema.Columns {
		if readers[i] = copyReaderFor(types[i], t.c.types[i]); readers[i] == nil {
			return false, fmt.Sprintf("column %s is %s in the source, %s in the target", c.Name, types[i], t.c.types[i]), nil
		}
	}
	t.copy = &copyLoad{readers: readers, insert: t.c.insert}
	var err error
	if t.copy.skipChecks, err = t.onlyDecimalChecks(ctx, readers); err != nil {
		return false, "", err
	}
	if st.Mode == plan.ModeMerge {
		// New keys in key order: inserted into the target as they are
		// (the staging table stays empty).
		cols := make([]string, len(t.c.columns))
		marks := make([]string, len(t.c.columns))
		for i, c := range t.c.columns {
			cols[i], marks[i] = sqlitex.Quote(c), "?"
		}
		t.copy.insert = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", sqlitex.Quote(st.Table), strings.Join(cols, ", "), strings.Join(marks, ", "))
		for i, c := range st.Schema.Columns {
			if st.IsKey(c.Name) {
				t.copy.keys = append(t.copy.keys, i)
			}
		}
	}
	return true, "", nil
}

// copyLoad is what AcceptCopy decided for CopyFrom.
type copyLoad struct {
	readers []copyReader
	insert  string // the one-row INSERT into the target
	keys    []int  // merge key columns (must not be NULL)
	// skipChecks: the target's only CHECK constraints are the DECIMAL
	// checks of the columns the copy writes with decimalReader
	// (onlyDecimalChecks), which takes only text those checks pass.
	skipChecks bool
}

// onlyDecimalChecks reports whether the target's CHECK constraints are
// all the DECIMAL checks sluice creates (sqlitex.DecimalCheckSQL) on
// columns the copy writes with a decimalReader (onlyChecksOf). The copy
// then inserts with PRAGMA ignore_check_constraints, the readers having
// checked more than the constraints would (their GLOBs cost a sixth of
// the copy's time).
func (t *Tx) onlyDecimalChecks(ctx context.Context, readers []copyReader) (bool, error) {
	var cols []int
	for i := range t.p.st.Schema.Columns {
		if readers[i] != nil && t.c.types[i].Kind == cdc.KindDecimal {
			cols = append(cols, i) // read by a decimalReader (copyReaderFor)
		}
	}
	return t.onlyChecksOf(ctx, cols)
}

// CopyFrom implements runner.CopySinkTx: it reads r, PostgreSQL COPY text
// (tab-separated columns aligned with SinkStage.Schema, \N for NULL,
// backslash escapes) as AcceptCopy accepted it, writes each value in its
// storage form with multi-row INSERTs into the target (no decode into Go
// values, no cdc.Coerce) and counts the rows as INSERTs written. A value
// not in the form its reader takes (NaN, infinity, a BC date, a NULL merge
// key) or refused by the target (a CHECK, NOT NULL) fails with an error
// wrapping ErrCopyValue or the database's, and poisons the transaction
// (roll it back: the runner then copies the chunk through sluice, which
// names the row).
func (t *Tx) CopyFrom(ctx context.Context, r io.Reader) (int64, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.copy == nil {
		t.err = errors.New("sqlite sink: CopyFrom before AcceptCopy")
		return 0, t.err
	}
	n, err := t.copyFrom(ctx, r)
	if err != nil {
		t.err = err
		return 0, err
	}
	t.written[cdc.OpInsert] += n
	return n, nil
}

func (t *Tx) copyFrom(ctx context.Context, r io.Reader) (n int64, err error) {
	cl := t.copy
	if cl.skipChecks {
		restore, cerr := t.ignoreChecks(ctx)
		if cerr != nil {
			return 0, cerr
		}
		defer func() {
			if rerr := restore(); rerr != nil && err == nil {
				n, err = 0, rerr
			}
		}()
	}
	ncols := len(cl.readers)
	per := rowsPerInsert(ncols)
	args := make([]any, 0, per*ncols)
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte // a line longer than br's buffer
	// arena holds the lines of the rows not inserted yet: a reader's text
	// shares its bytes (fieldText), so a text costs no allocation of its
	// own. It is reused once they are inserted (the driver binds copies).
	arena := make([]byte, 0, 64<<10)
	var total int64
	rows := 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.insertCopyRows(ctx, rows, args); err != nil {
			return fmt.Errorf("sqlite sink: write %q: %w", t.p.st.Table, err)
		}
		total += int64(rows)
		rows, args, arena = 0, args[:0], arena[:0]
		return nil
	}
	for line := int64(1); ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("sqlite sink: read COPY text: %w", err)
		}
		if len(b) == 0 && errors.Is(err, io.EOF) {
			break
		}
		b = bytes.TrimSuffix(b, []byte{'\n'})
		off := len(arena)
		arena = append(arena, b...) // a new array keeps the earlier lines in the old one
		b = arena[off:]
		start := len(args)
		for i := range ncols {
			field := b
			if j := bytes.IndexByte(b, '\t'); j >= 0 {
				field, b = b[:j], b[j+1:]
			} else {
				b = nil
			}
			if i == ncols-1 && len(b) > 0 || i < ncols-1 && b == nil {
				return 0, fmt.Errorf("sqlite sink: %w: line %d of the chunk does not have %d columns", ErrCopyValue, line, ncols)
			}
			if len(field) == 2 && field[0] == '\\' && field[1] == 'N' {
				args = append(args, nil)
				continue
			}
			v, ok := cl.readers[i](unescapeCopy(field))
			if !ok {
				return 0, fmt.Errorf("sqlite sink: %w: column %q, line %d of the chunk", ErrCopyValue, t.p.st.Schema.Columns[i].Name, line)
			}
			args = append(args, v)
		}
		for _, k := range cl.keys {
			if args[start+k] == nil {
				return 0, fmt.Errorf("sqlite sink: %w: merge key column %q is NULL, line %d of the chunk", ErrCopyValue, t.p.st.Schema.Columns[k].Name, line)
			}
		}
		if rows++; rows == per {
			if err := flush(); err != nil {
				return 0, err
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total, nil
}

// insertCopyRows runs the copy's INSERT of n rows with args, prepared once
// per size for the transaction.
func (t *Tx) insertCopyRows(ctx context.Context, n int, args []any) error {
	st := t.copyMulti[n]
	if st == nil {
		pc, ok := t.q.(interface {
			PrepareContext(context.Context, string) (*sql.Stmt, error)
		})
		if !ok {
			_, err := t.q.ExecContext(ctx, multiInsertSQL(t.copy.insert, n), args...)
			return err
		}
		var err error
		if st, err = pc.PrepareContext(ctx, multiInsertSQL(t.copy.insert, n)); err != nil {
			return err
		}
		if t.copyMulti == nil {
			t.copyMulti = map[int]*sql.Stmt{}
		}
		t.copyMulti[n] = st
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

// unescapeCopy decodes a COPY text field's backslash escapes (\b \f \n \r
// \t \v, \\ and any other escaped character, \ooo octal, \xhh hex) in
// place of a copy only when it has one.
func unescapeCopy(f []byte) []byte {
	i := bytes.IndexByte(f, '\\')
	if i < 0 {
		return f
	}
	out := make([]byte, 0, len(f))
	out = append(out, f[:i]...)
	for ; i < len(f); i++ {
		c := f[i]
		if c != '\\' || i+1 == len(f) {
			out = append(out, c)
			continue
		}
		i++
		c = f[i]
		switch c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, '\v')
		case 'x':
			v, j := 0, i+1
			for ; j < len(f) && j < i+3 && isHex(f[j]); j++ {
				v = v*16 + hexVal(f[j])
			}
			if j == i+1 {
				out = append(out, 'x') // \x without digits is x
				continue
			}
			out = append(out, byte(v))
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, j := 0, i
			for ; j < len(f) && j < i+3 && f[j] >= '0' && f[j] <= '7'; j++ {
				v = v*8 + int(f[j]-'0')
			}
			out = append(out, byte(v))
			i = j - 1
		default:
			out = append(out, c)
		}
	}
	return out
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}
