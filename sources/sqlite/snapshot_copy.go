package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.CopySnapshot = (*snapshot)(nil)

// CopyFormat is the text format of a SQLite pass-through backfill:
// PostgreSQL's COPY text format (sources/postgres.CopyFormat), which a
// PostgreSQL sink loads as it is.
const CopyFormat = "postgres"

// ErrNotCanonical is returned by a pass-through chunk (CopyChunks.Copy)
// that meets a stored value not in the form sluice writes for its column's
// type (docs/architecture.md, "SQLite storage conventions"): the runner
// then copies that chunk through sluice, which decodes the value as a run
// does and names the row when it does not fit.
var ErrNotCanonical = errors.New("a stored value is not in sluice's form for its type")

// PrepareCopy implements runner.CopySnapshot for a backfill from SQLite
// into PostgreSQL: each chunk's rows are written as PostgreSQL COPY text
// straight from their stored values, with no decode into Go values and no
// encode for the sink. It takes a plan whose projection names table
// columns only (a job without select, or one of bare column names), each
// projected with its own type, of the types below, and whose filter, if
// any, renders as SQLite SQL (evaluated by SQLite on the stored values,
// as a run's pushdown does). Any other plan is refused with
// runner.ErrNoPassThrough and its rows go through sluice.
//
// Values are written only when stored in sluice's form for their type,
// which PostgreSQL reads as the same value: integers as INTEGER (in range
// for INT and SMALLINT; TINYINT as smallint in -128..127), BOOLEAN as 0/1
// (t/f), DOUBLE as REAL (shortest text that reads back exactly), DECIMAL(p,s)
// as text with exactly s fraction digits, no leading zero and at most p
// digits (numeric(p,s)); DECIMAL without precision as plain decimal text
// (numeric); STRING and VARCHAR(n) as text (escaped for COPY); DATE as
// 'YYYY-MM-DD'; TIMESTAMP as 'YYYY-MM-DD HH:MM:SS[.ffffff]±HH:MM' (at most
// six fraction digits: PostgreSQL keeps microseconds); TIMESTAMP_NTZ
// likewise without the zone; BINARY as a BLOB (bytea hex). Any other value
// (another storage class, another shape, NULL in a key column) fails the
// chunk with ErrNotCanonical: the runner copies that chunk through
// sluice, whose decoding accepts what a run accepts and names a row that
// does not fit. FLOAT, CHAR(n), JSON, UUID and PostgreSQL-native columns
// are refused up front (ErrNoPassThrough).
func (s *snapshot) PrepareCopy(ctx context.Context, p *plan.Plan) (runner.CopyChunks, error) {
	if len(p.Project) != len(p.Sink.Schema.Columns) {
		return nil, fmt.Errorf("%w: %d projected columns for %d sink columns", runner.ErrNoPassThrough, len(p.Project), len(p.Sink.Schema.Columns))
	}
	src := p.Source.Schema.Columns
	table := s.info.TableSchema
	cc := &copyChunks{s: s}
	sel := make([]string, len(p.Project))
	for i, it := range p.Project {
		if it.Expr == nil {
			return nil, fmt.Errorf("%w: projection %s is not bound", runner.ErrNoPassThrough, it.Name)
		}
		ref, ok := it.Expr.Column()
		if !ok || ref.Col >= len(src) {
			return nil, fmt.Errorf("%w: projection %s is an expression, not a column", runner.ErrNoPassThrough, it.Text)
		}
		ti := table.Index(src[ref.Col].Name)
		if ti < 0 {
			return nil, fmt.Errorf("%w: projection %s is not a column of table %s", runner.ErrNoPassThrough, it.Text, s.info.Table)
		}
		t := table.Columns[ti].Type
		if t != p.Sink.Schema.Columns[i].Type {
			return nil, fmt.Errorf("%w: column %s is %s, projected as %s", runner.ErrNoPassThrough, table.Columns[ti].Name, t, p.Sink.Schema.Columns[i].Type)
		}
		pgType, enc := copyEncoder(t)
		if enc == nil {
			return nil, fmt.Errorf("%w: column %s is %s, which a SQLite pass-through does not write", runner.ErrNoPassThrough, table.Columns[ti].Name, t)
		}
		cc.types = append(cc.types, pgType)
		cc.encs = append(cc.encs, enc)
		cc.names = append(cc.names, table.Columns[ti].Name)
		// Unary + keeps the value and its storage class but hides the
		// declared type, so that the driver does not parse DATE and
		// TIMESTAMP text into time.Time.
		sel[i] = "+__s." + sqlitex.Quote(table.Columns[ti].Name)
	}
	for _, k := range s.keyIdx {
		sel = append(sel, "__s."+sqlitex.Quote(table.Columns[k].Name))
	}
	where := ""
	if p.Filter != nil && p.Filter.Expr != nil {
		col := func(_, idx int) string { return "__s." + sqlitex.Quote(src[idx].Name) }
		w, err := p.Filter.Expr.SQL(expr.SQLite, col)
		if err != nil {
			return nil, fmt.Errorf("%w: filter %s: %v", runner.ErrNoPassThrough, p.Filter.Text, err)
		}
		where = " WHERE " + w
	}
	at, err := sqlitex.Encode(s.at, cdc.TypeTimestamp)
	if err != nil {
		return nil, err
	}
	inner := []string{"'INSERT' AS " + sqlitex.Quote(cdc.ColChangeType), strconv.FormatInt(s.seq, 10) + " AS " + sqlitex.Quote(cdc.ColCommitVersion),
		sqlitex.QuoteString(at.(string)) + " AS " + sqlitex.Quote(cdc.ColCommitTimestamp)}
	keys := make([]string, len(s.keyIdx))
	outerKeys := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		keys[i] = sqlitex.Quote(table.Columns[k].Name)
		outerKeys[i] = "__s." + keys[i]
	}
	for _, c := range table.Columns {
		inner = append(inner, sqlitex.Quote(c.Name))
	}
	cc.keyList = strings.Join(keys, ", ")
	cc.head = "SELECT " + strings.Join(sel, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM " + sqlitex.Quote(s.info.Table)
	cc.tail = ") AS __s" + where + " ORDER BY " + strings.Join(outerKeys, ", ")
	// Compile it once now: a filter SQLite cannot run is refused here.
	st, err := s.tx.PrepareContext(ctx, cc.head+cc.tail)
	if err != nil {
		return nil, fmt.Errorf("%w: compile the backfill's read of %s: %v", runner.ErrNoPassThrough, s.info.Table, err)
	}
	st.Close()
	return cc, nil
}

// copyChunks is the runner.CopyChunks of a SQLite snapshot.
type copyChunks struct {
	s          *snapshot
	head, tail string // the chunk SELECT before and after its key range
	keyList    string
	types      []string
	encs       []copyEnc
	names      []string

	// the stored form of the last two keys Bound returned
	bounds [2]struct{ key, raw []any }
}

func (cc *copyChunks) Format() string  { return CopyFormat }
func (cc *copyChunks) Types() []string { return cc.types }

func (cc *copyChunks) Steps() []plan.Step {
	t := sqlitex.Quote(cc.s.info.Table)
	return []plan.Step{
		{Where: "source", What: "find the key that ends the chunk: the n-th after the last chunk's (key order)",
			SQL: "SELECT " + cc.keyList + " FROM " + t + " WHERE (" + cc.keyList + ") > (<last key>) ORDER BY " + cc.keyList + " LIMIT 1 OFFSET <chunk - 1>"},
		{Where: "source", What: "read the chunk's stored values, filtered and projected in SQL, and write them as PostgreSQL COPY text without decoding them (a value not in sluice's form for its type sends the chunk through sluice)",
			SQL: cc.head + " WHERE (" + cc.keyList + ") > (<last key>) AND (" + cc.keyList + ") <= (<chunk's end key>)" + cc.tail},
	}
}

// rawKey returns the stored form of key: one Bound returned, else
// encoded (snapshot.rawKey).
func (cc *copyChunks) rawKey(key []any) ([]any, error) {
	cols := cc.s.info.TableSchema.Columns
	for _, b := range cc.bounds {
		if b.raw != nil && sameKey(key, b.key, cols, cc.s.keyIdx) {
			return b.raw, nil
		}
	}
	return cc.s.rawKey(key)
}

// keyRange renders the WHERE clause of the keys in (after, upTo] and its
// arguments.
func (cc *copyChunks) keyRange(after, upTo []any) (string, []any, error) {
	var conds []string
	var args []any
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cc.s.keyIdx)), ", ")
	for _, b := range []struct {
		key []any
		op  string
	}{{after, ">"}, {upTo, "<="}} {
		if b.key == nil {
			continue
		}
		raw, err := cc.rawKey(b.key)
		if err != nil {
			return "", nil, fmt.Errorf("read %s at key %v: %w", cc.s.info.Table, b.key, err)
		}
		conds = append(conds, "("+cc.keyList+") "+b.op+" ("+marks+")")
		args = append(args, raw...)
	}
	if conds == nil {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// Bound implements runner.CopyChunks.
func (cc *copyChunks) Bound(ctx context.Context, after []any, n int) ([]any, int64, bool, error) {
	s := cc.s
	if n <= 0 {
		return nil, 0, false, fmt.Errorf("chunk size %d: want at least 1", n)
	}
	where, args, err := cc.keyRange(after, nil)
	if err != nil {
		return nil, 0, false, err
	}
	t := sqlitex.Quote(s.info.Table)
	raw := make([]any, len(s.keyIdx))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	err = s.tx.QueryRowContext(ctx, "SELECT "+cc.keyList+" FROM "+t+where+" ORDER BY "+cc.keyList+" LIMIT 1 OFFSET ?", append(args, n-1)...).Scan(ptrs...)
	if errors.Is(err, sql.ErrNoRows) {
		var rows int64
		if err := s.tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t+where, args...).Scan(&rows); err != nil {
			return nil, 0, false, fmt.Errorf("count rows of %s after key %v: %w", s.info.Table, after, err)
		}
		return nil, rows, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("find the end of the chunk of %s after key %v: %w", s.info.Table, after, err)
	}
	cols := s.info.TableSchema.Columns
	key := make([]any, len(raw))
	for i, k := range s.keyIdx {
		if raw[i] == nil {
			return nil, 0, false, fmt.Errorf("read %s: primary key column %s is NULL; a keyset scan cannot page past it (make the column NOT NULL)", s.info.Table, cols[k].Name)
		}
		if key[i], err = sqlitex.Decode(raw[i], cols[k].Type); err != nil {
			return nil, 0, false, fmt.Errorf("read %s: key column %s: %w", s.info.Table, cols[k].Name, err)
		}
	}
	cc.bounds[0] = cc.bounds[1]
	cc.bounds[1].key, cc.bounds[1].raw = key, raw
	return key, int64(n), true, nil
}

// Copy implements runner.CopyChunks: it writes the rows with a key in
// (after, upTo] as COPY text lines to w. A value not in sluice's form for
// its type returns an error wrapping ErrNotCanonical, naming the row's key
// and the column.
func (cc *copyChunks) Copy(ctx context.Context, w io.Writer, after, upTo []any) error {
	s := cc.s
	where, args, err := cc.keyRange(after, upTo)
	if err != nil {
		return err
	}
	rows, err := s.tx.QueryContext(ctx, cc.head+where+cc.tail, args...)
	if err != nil {
		return fmt.Errorf("read %s after key %v: %w", s.info.Table, after, err)
	}
	defer rows.Close()
	nk := len(s.keyIdx)
	vals := make([]any, len(cc.encs)+nk)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var line []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", s.info.Table, err)
		}
		line = line[:0]
		for i, enc := range cc.encs {
			if i > 0 {
				line = append(line, '\t')
			}
			v := vals[i]
			if v == nil {
				line = append(line, `\N`...)
				continue
			}
			var ok bool
			if line, ok = enc(line, v); !ok {
				return fmt.Errorf("%w: table %s, row with key %s, column %s (%s): stored %s", ErrNotCanonical, s.info.Table, s.keyText(vals[len(cc.encs):]), cc.names[i], cc.types[i], storedText(v))
			}
		}
		for _, k := range vals[len(cc.encs):] {
			if k == nil {
				return fmt.Errorf("%w: table %s has a row with a NULL primary key", ErrNotCanonical, s.info.Table)
			}
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s after key %v: %w", s.info.Table, after, err)
	}
	if upTo != nil {
		s.lastKey, s.lastRaw = nil, nil
		if raw, err := cc.rawKey(upTo); err == nil {
			s.lastKey, s.lastRaw = upTo, raw
		}
	}
	return nil
}

// storedText describes a stored value for ErrNotCanonical.
func storedText(v any) string {
	switch x := v.(type) {
	case string:
		return "text " + strconv.Quote(x)
	case int64:
		return "integer " + strconv.FormatInt(x, 10)
	case float64:
		return "real " + strconv.FormatFloat(x, 'g', -1, 64)
	case []byte:
		return fmt.Sprintf("a blob of %d bytes", len(x))
	}
	return fmt.Sprintf("%v", v)
}
