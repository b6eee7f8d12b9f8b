package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/rowhash"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

var _ runner.Differ = (*Backend)(nil)

// DiffNative implements runner.Differ: PostgreSQL 14 and later hash rows
// with hash_record_extended (rowhash.PGNativeHash).
func (b *Backend) DiffNative() string {
	if b.version >= 140000 {
		return "postgres:hash_record_extended"
	}
	return ""
}

// DiffRead implements runner.Differ: a REPEATABLE READ, READ ONLY
// transaction, in the DateStyle rowhash.PGCanon needs.
func (b *Backend) DiffRead(ctx context.Context) (runner.DiffReader, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, b.wrap(err, "diff: begin a read")
	}
	if _, err := tx.Exec(ctx, "SET LOCAL DateStyle TO '"+rowhash.PGDateStyle+"'"); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, b.wrap(err, "diff: begin a read")
	}
	return &diffReader{b: b, tx: tx, ctx: context.WithoutCancel(ctx)}, nil
}

type diffReader struct {
	b   *Backend
	tx  pgx.Tx
	ctx context.Context // for Close
}

func (d *diffReader) Close() error { return d.tx.Rollback(d.ctx) }

// diffSQL renders rel's inner query: the bucket b, then (with rows) each
// column's canonical text, else the row's hash h. Hashes are rowhash's
// (MD5 of the canonical text), or with rel.Native PostgreSQL's own
// (rowhash.PGNativeHash: hash_record_extended(ROW(c1::numeric, …), 0)).
//
//	SELECT (('x' || substr(md5(<key text>), 1, 16))::bit(64)::bigint >> (64-bits)) & mask AS b,
//	       ('x' || substr(md5(<row text>), 1, 16))::bit(64)::bigint AS h   -- buckets
//	       <canonical text of c1> AS c0, …                                 -- rows
//	FROM "t" WHERE …
func diffSQL(rel *runner.DiffRelation, bits int, rows bool) (string, error) {
	cs := make([]string, len(rel.Columns))
	ns := make([]string, len(rel.Columns))
	for i := range rel.Columns {
		x, err := rel.Columns[i].SQL(sinkpg.Dialect, sinkpg.Quote)
		if err != nil {
			return "", fmt.Errorf("diff: column %s: %w", rel.Columns[i].Name, err)
		}
		cs[i] = rowhash.PGCanon(x, rel.Columns[i].Type)
		ns[i] = rowhash.PGNative(x, rel.Columns[i].Type)
	}
	hash := rowhash.PGHash
	if rel.Native {
		hash = rowhash.PGNativeHash
	} else {
		ns = cs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT (%s >> %d) & %d::bigint AS b", hash(ns[:rel.Keys]), 64-bits, 1<<bits-1)
	if rows {
		for i, c := range cs {
			fmt.Fprintf(&b, ", %s AS c%d", c, i)
		}
	} else {
		fmt.Fprintf(&b, ", %s AS h", hash(ns))
	}
	fmt.Fprintf(&b, " FROM %s", sinkpg.Quote(rel.Table))
	w, err := rel.WhereSQL(sinkpg.Dialect, sinkpg.Quote)
	if err != nil {
		return "", fmt.Errorf("diff: filter: %w", err)
	}
	if w != "" {
		b.WriteString(" WHERE " + w)
	}
	return b.String(), nil
}

// Buckets implements runner.DiffReader.
func (d *diffReader) Buckets(ctx context.Context, rel *runner.DiffRelation, bits int, fn func(runner.BucketSum) error) error {
	inner, err := diffSQL(rel, bits, false)
	if err != nil {
		return err
	}
	q := "SELECT b, count(*), sum((h >> 32) & 4294967295::bigint)::bigint, sum(h & 4294967295::bigint)::bigint FROM (" + inner + ") q GROUP BY b ORDER BY b"
	rows, err := d.tx.Query(ctx, q)
	if err != nil {
		return d.b.wrap(err, "diff: hash %s", sinkpg.Quote(rel.Table))
	}
	defer rows.Close()
	for rows.Next() {
		var s runner.BucketSum
		var bk int64
		if err := rows.Scan(&bk, &s.Count, &s.Sum1, &s.Sum2); err != nil {
			return d.b.wrap(err, "diff: hash %s", sinkpg.Quote(rel.Table))
		}
		s.Bucket = uint32(bk)
		if err := fn(s); err != nil {
			return err
		}
	}
	return d.b.wrap(rows.Err(), "diff: hash %s", sinkpg.Quote(rel.Table))
}

// Rows implements runner.DiffReader.
func (d *diffReader) Rows(ctx context.Context, rel *runner.DiffRelation, bits int, buckets []uint32, fn func(uint32, []*string) error) error {
	inner, err := diffSQL(rel, bits, true)
	if err != nil {
		return err
	}
	q := "SELECT * FROM (" + inner + ") q"
	var args []any
	if buckets != nil {
		list := make([]int64, len(buckets))
		for i, b := range buckets {
			list[i] = int64(b)
		}
		q += " WHERE b = ANY($1::bigint[])"
		args = append(args, list)
	}
	q += " ORDER BY b"
	rows, err := d.tx.Query(ctx, q, args...)
	if err != nil {
		return d.b.wrap(err, "diff: read %s", sinkpg.Quote(rel.Table))
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
			return d.b.wrap(err, "diff: read %s", sinkpg.Quote(rel.Table))
		}
		if err := fn(uint32(bk), cols); err != nil {
			return err
		}
	}
	return d.b.wrap(rows.Err(), "diff: read %s", sinkpg.Quote(rel.Table))
}
