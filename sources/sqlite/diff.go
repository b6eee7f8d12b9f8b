package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/rowhash"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.Differ = (*Backend)(nil)

// DiffNative implements runner.Differ: SQLite has no row hash of its own
// (its rows hash with rowhash's Go functions on every path).
func (b *Backend) DiffNative() string { return "" }

// DiffRead implements runner.Differ: a read transaction (WAL: it sees the
// database as of its first query while writers go on). The diffs under way
// on one file share one read transaction: a diff whose source and target
// are the same file reads both sides in it, at once (one snapshot of
// both, and one read connection, which may be all the file's Handle has:
// a second transaction would wait for the first to end, forever).
func (b *Backend) DiffRead(ctx context.Context) (runner.DiffReader, error) {
	diffTxs.mu.Lock()
	defer diffTxs.mu.Unlock()
	if s, ok := diffTxs.m[b.db]; ok {
		s.refs++
		return &diffReader{tx: s.tx, h: b.db}, nil
	}
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("diff: begin a read of %s: %w", b.loc.Path, err)
	}
	if diffTxs.m == nil {
		diffTxs.m = map[*sqlitex.Handle]*sharedRead{}
	}
	diffTxs.m[b.db] = &sharedRead{tx: tx, refs: 1}
	return &diffReader{tx: tx, h: b.db}, nil
}

// diffTxs are the read transactions of the diffs under way, by the file's
// Handle, with how many diff readers use each.
var diffTxs struct {
	mu sync.Mutex
	m  map[*sqlitex.Handle]*sharedRead
}

type sharedRead struct {
	tx   *sql.Tx
	refs int
}

type diffReader struct {
	tx     *sql.Tx
	h      *sqlitex.Handle
	closed bool // guarded by diffTxs.mu
}

// Close releases the reader; the last one of its transaction ends it.
func (d *diffReader) Close() error {
	diffTxs.mu.Lock()
	defer diffTxs.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	s := diffTxs.m[d.h]
	if s.refs--; s.refs > 0 {
		return nil
	}
	delete(diffTxs.m, d.h)
	return d.tx.Rollback()
}

// diffSQL renders the second level's inner query: each row's bucket b,
// then each column's canonical text.
//
//	SELECT (sluice_diff_hash('[types of the keys]', k1, …) >> (64-bits)) & mask AS b,
//	       sluice_diff_canon('[type]', c1) AS c0, …
//	FROM "t" WHERE …
func diffSQL(rel *runner.DiffRelation, bits int) (string, error) {
	xs := make([]string, len(rel.Columns))
	for i := range rel.Columns {
		x, err := rel.Columns[i].SQL(expr.SQLite, expr.QuoteIdent)
		if err != nil {
			return "", fmt.Errorf("diff: column %s: %w", rel.Columns[i].Name, err)
		}
		xs[i] = x
	}
	types := rel.Types()
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT (%s >> %d) & %d AS b", rowhash.SQLiteHash(xs[:rel.Keys], types[:rel.Keys]), 64-bits, 1<<bits-1)
	for i, x := range xs {
		fmt.Fprintf(&b, ", %s AS c%d", rowhash.SQLiteCanon(x, types[i]), i)
	}
	fmt.Fprintf(&b, " FROM %s", expr.QuoteIdent(rel.Table))
	w, err := rel.WhereSQL(expr.SQLite, expr.QuoteIdent)
	if err != nil {
		return "", fmt.Errorf("diff: filter: %w", err)
	}
	if w != "" {
		b.WriteString(" WHERE " + w)
	}
	return b.String(), nil
}

// bucketsSQL renders the first level: one pass of the aggregate
// sluice_diff_buckets (rowhash.FuncBuckets) over rel's rows, which hashes
// each row in Go and sums by bucket without a sort.
//
//	SELECT sluice_diff_buckets(bits, keys, '[types]', c1, …) FROM "t" WHERE …
func bucketsSQL(rel *runner.DiffRelation, bits int) (string, error) {
	xs := make([]string, len(rel.Columns))
	for i := range rel.Columns {
		x, err := rel.Columns[i].SQL(expr.SQLite, expr.QuoteIdent)
		if err != nil {
			return "", fmt.Errorf("diff: column %s: %w", rel.Columns[i].Name, err)
		}
		xs[i] = x
	}
	q := "SELECT " + rowhash.SQLiteBuckets(bits, rel.Keys, xs, rel.Types()) + " FROM " + expr.QuoteIdent(rel.Table)
	w, err := rel.WhereSQL(expr.SQLite, expr.QuoteIdent)
	if err != nil {
		return "", fmt.Errorf("diff: filter: %w", err)
	}
	if w != "" {
		q += " WHERE " + w
	}
	return q, nil
}

// Buckets implements runner.DiffReader.
func (d *diffReader) Buckets(ctx context.Context, rel *runner.DiffRelation, bits int, fn func(runner.BucketSum) error) error {
	q, err := bucketsSQL(rel, bits)
	if err != nil {
		return err
	}
	var blob []byte
	if err := d.tx.QueryRowContext(ctx, q).Scan(&blob); err != nil {
		return fmt.Errorf("diff: hash %s: %w", rel.Table, err)
	}
	return rowhash.DecodeBuckets(blob, func(b uint32, n, s1, s2 int64) error {
		return fn(runner.BucketSum{Bucket: b, Count: n, Sum1: s1, Sum2: s2})
	})
}

// Rows implements runner.DiffReader.
func (d *diffReader) Rows(ctx context.Context, rel *runner.DiffRelation, bits int, buckets []uint32, fn func(uint32, []*string) error) error {
	inner, err := diffSQL(rel, bits)
	if err != nil {
		return err
	}
	q := "SELECT * FROM (" + inner + ")"
	var args []any
	if buckets != nil {
		list, _ := json.Marshal(buckets)
		q += " WHERE b IN (SELECT value FROM json_each(?))"
		args = append(args, string(list))
	}
	q += " ORDER BY b"
	rows, err := d.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("diff: read %s: %w", rel.Table, err)
	}
	defer rows.Close()
	n := len(rel.Columns)
	for rows.Next() {
		var bk int64
		cols := make([]*string, n)
		dest := make([]any, n+1)
		dest[0] = &bk
		for i := range cols {
			dest[i+1] = &cols[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("diff: read %s: %w", rel.Table, err)
		}
		if err := fn(uint32(bk), cols); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("diff: read %s: %w", rel.Table, err)
	}
	return nil
}
