package postgres

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

var _ runner.Snapshotter = (*Backend)(nil)

// Snapshot implements runner.Snapshotter for `sluice backfill`.
//
// It opens a REPEATABLE READ, READ ONLY transaction on one pooled
// connection (held until Close) and fixes the snapshot's Offset with the
// code of a stream read (readPoint): the read point a read from `from`
// would produce in this transaction's snapshot. The table rows the
// snapshot shows are exactly the state at that read point: transactions
// visible in the snapshot and not in from are the read's batch, and those
// still running are in the read point's xip or above its xmax, so the
// next read returns them. The table is then read with a keyset scan:
//
//	SELECT <columns> FROM "t" WHERE ("k1", "k2") > ($1::T1, $2::T2) ORDER BY "k1", "k2" LIMIT n
//
// Types outside sinkpg.LogicalType's mapping are read as text and bound as
// text cast to the column's type. Rows are OpInsert changes with canonical
// values, version = the read point's batch << 32 (below every change of
// the next read) and commit time = the transaction's now() in UTC. Errors:
// ErrNoPrimaryKey for a table without a primary key, the errors of a read
// (ErrClusterMismatch, ErrPurged, runner.ErrOffsetMoved for a recreated
// stream), ErrTableChanged when the table's columns differ from info's.
// Like pg_dump, the open transaction holds back VACUUM's horizon on the
// source database for as long as the backfill runs.
func (b *Backend) Snapshot(ctx context.Context, info *runner.StreamInfo, from cdc.Offset) (runner.SnapshotReader, error) {
	if len(info.TableSchema.Key) == 0 {
		return nil, fmt.Errorf("snapshot of %s: %w (a backfill pages through the table by primary key)", sinkpg.Quote(info.Table), ErrNoPrimaryKey)
	}
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, b.wrap(err, "begin snapshot of %s", info.Name)
	}
	if err := lockLog(ctx, tx, info.Table); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, b.wrap(err, "lock the change log of %s", info.Name)
	}
	s, err := b.openSnapshot(ctx, tx, info, from)
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func (b *Backend) openSnapshot(ctx context.Context, tx pgx.Tx, info *runner.StreamInfo, from cdc.Offset) (*snapshot, error) {
	t, fp, to, err := b.readPoint(ctx, tx, info, from)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(t.Table.Schema().Names(), info.TableSchema.Names()) || !slices.Equal(t.Table.Key, info.TableSchema.Key) {
		return nil, fmt.Errorf("%w: table %s has columns %v, the job was planned with %v", ErrTableChanged, sinkpg.Quote(info.Table), t.Table.Schema().Names(), info.TableSchema.Names())
	}
	var at time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&at); err != nil {
		return nil, b.wrap(err, "snapshot of %s", info.Name)
	}
	s := &snapshot{b: b, tx: tx, ctx: context.WithoutCancel(ctx), info: info, t: t, from: fp, to: to, at: at.UTC()}
	s.keyIdx, _ = info.TableSchema.KeyIndexes()
	s.sql()
	b.log.Debug("snapshot opened", "stream", info.Name, "from", from.String(), "offset", to.String())
	return s, nil
}

// snapshot is a runner.SnapshotReader over one REPEATABLE READ transaction.
type snapshot struct {
	b      *Backend
	tx     pgx.Tx
	ctx    context.Context // for Close: the Snapshot context without its cancellation
	info   *runner.StreamInfo
	t      *Tracked
	from   *Position // nil: the zero offset
	to     Position
	at     time.Time
	keyIdx []int

	cols, keyList, params, first, after, count string
}

func (s *snapshot) sql() {
	cols := s.t.Table.Columns
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = c.Select("")
	}
	s.cols = strings.Join(sel, ", ")
	keys := make([]string, len(s.keyIdx))
	params := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		c := cols[k]
		keys[i] = sinkpg.Quote(c.Name)
		params[i] = fmt.Sprintf("$%d::%s", i+1, c.PGType)
		if !c.Native {
			params[i] = fmt.Sprintf("$%d::text::%s", i+1, c.PGType)
		}
	}
	s.keyList = strings.Join(keys, ", ")
	s.params = strings.Join(params, ", ")
	table := sinkpg.Quote(s.t.Table.Name)
	s.first = "SELECT " + s.cols + " FROM " + table + " ORDER BY " + s.keyList + " LIMIT "
	s.after = "SELECT " + s.cols + " FROM " + table + " WHERE (" + s.keyList + ") > (" + s.params + ") ORDER BY " + s.keyList + " LIMIT "
	s.count = "SELECT count(*) FROM " + table
}

func (s *snapshot) Offset() cdc.Offset { return s.to.Offset() }

func (s *snapshot) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.tx.QueryRow(ctx, s.count).Scan(&n); err != nil {
		return 0, s.b.wrap(err, "count rows of %s", sinkpg.Quote(s.info.Table))
	}
	return n, nil
}

func (s *snapshot) Steps() []plan.Step {
	return []plan.Step{
		{Where: "source", What: "open the snapshot; its offset is the read point of a stream read in it",
			SQL: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;\nSELECT pg_current_snapshot()  -- narrowed to the table's changes, as a read does"},
		{Where: "source", What: "read the table in primary-key order, one chunk after the last key", SQL: s.after + "<chunk>"},
	}
}

// keyArgs encodes a key for the $n parameters of the keyset conditions.
func (s *snapshot) keyArgs(key []any) ([]any, error) {
	if len(key) != len(s.keyIdx) {
		return nil, fmt.Errorf("key %v has %d values, the primary key of %s has %d columns", key, len(key), sinkpg.Quote(s.info.Table), len(s.keyIdx))
	}
	args := make([]any, len(key))
	for i, k := range s.keyIdx {
		c := s.t.Table.Columns[k]
		if key[i] == nil {
			return nil, fmt.Errorf("key column %s is NULL", sinkpg.Quote(c.Name))
		}
		if c.Native {
			args[i] = sinkpg.Encode(key[i], c.Type)
		} else {
			args[i] = cdc.FormatValue(key[i], c.Type)
		}
	}
	return args, nil
}

func (s *snapshot) Chunk(ctx context.Context, after []any, n int) ([]cdc.Change, error) {
	if n <= 0 {
		return nil, fmt.Errorf("chunk size %d: want at least 1", n)
	}
	q, args := s.first+fmt.Sprint(n), []any(nil)
	if after != nil {
		var err error
		if args, err = s.keyArgs(after); err != nil {
			return nil, fmt.Errorf("read %s after key %v: %w", sinkpg.Quote(s.info.Table), after, err)
		}
		q = s.after + fmt.Sprint(n)
	}
	rows, err := s.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, s.b.wrap(err, "read %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	defer rows.Close()
	cols := s.t.Table.Columns
	out := make([]cdc.Change, 0, min(n, 4096))
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, s.b.wrap(err, "read %s after key %v", sinkpg.Quote(s.info.Table), after)
		}
		row := make([]any, len(cols))
		for i, c := range cols {
			if row[i], err = sinkpg.Decode(vals[i], c.Type); err != nil {
				return nil, fmt.Errorf("read %s: row with key %s: column %s: %w", sinkpg.Quote(s.info.Table), s.keyText(vals), c.Name, err)
			}
		}
		out = append(out, cdc.Change{Op: cdc.OpInsert, CommitVersion: s.to.Batch << 32, CommitTime: s.at, Row: row})
	}
	if err := rows.Err(); err != nil {
		return nil, s.b.wrap(err, "read %s after key %v", sinkpg.Quote(s.info.Table), after)
	}
	return out, nil
}

func (s *snapshot) keyText(vals []any) string {
	parts := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		parts[i] = fmt.Sprintf("%s=%v", s.t.Table.Columns[k].Name, vals[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Catchup reads the stream's changes in (from, Offset()] restricted to the
// keys at or before upTo: ChangesQuery (the single definition of a read)
// run in the snapshot's transaction — whose snapshot is the read point's,
// as ChangesQuery requires — and filtered by key in SQL with the
// comparison Chunk's ORDER BY uses.
func (s *snapshot) Catchup(ctx context.Context, upTo []any, opt runner.ReadOptions) (runner.ChangeReader, error) {
	r := &catchup{point: s.to.Offset(), batch: opt.BatchSize, maxBytes: batchBytes(opt), cols: s.t.Table.Columns, stream: s.info.Name, b: s.b}
	if r.batch <= 0 {
		r.batch = DefaultBatchSize
	}
	if s.from != nil && s.from.Snap == s.to.Snap && !s.from.Initial {
		r.done = true // nothing new since from
		return r, nil
	}
	args, err := s.keyArgs(upTo)
	if err != nil {
		return nil, fmt.Errorf("catch up %s up to key %v: %w", s.info.Name, upTo, err)
	}
	lhs := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		c := s.t.Table.Columns[k]
		lhs[i] = "c." + sinkpg.Quote(c.Name)
		if !c.Native { // ChangesQuery returns it as text
			lhs[i] = "(" + lhs[i] + ")::" + c.PGType
		}
	}
	q := "SELECT * FROM (" + ChangesQuery(s.t, s.info, s.from, s.to) + ") c WHERE (" + strings.Join(lhs, ", ") + ") <= (" + s.params +
		`) ORDER BY c."__commit_version", c."__change_type" = 'UPDATE_AFTER'`
	if r.rows, err = s.tx.Query(ctx, q, args...); err != nil {
		return nil, s.b.wrap(err, "catch up stream %s", s.info.Name)
	}
	return r, nil
}

// Close ends the snapshot's transaction.
func (s *snapshot) Close() error { return s.tx.Rollback(s.ctx) }

// catchup is the ChangeReader of Catchup; closing it leaves the snapshot's
// transaction open.
type catchup struct {
	b      *Backend
	rows   pgx.Rows
	cols   []sinkpg.Column
	point  cdc.Offset
	batch  int
	stream string
	done   bool
	// maxBytes bounds a batch's rows as sent by the server (batchBytes).
	maxBytes int
}

func (r *catchup) ReadPoint() cdc.Offset { return r.point }

func (r *catchup) Next(ctx context.Context) ([]cdc.Change, error) {
	if r.done || r.rows == nil {
		return nil, io.EOF
	}
	var out []cdc.Change
	size := 0
	for len(out) < r.batch && size < r.maxBytes && r.rows.Next() {
		size += rowBytes(r.rows)
		vals, err := r.rows.Values()
		if err != nil {
			return nil, r.b.wrap(err, "catch up stream %s", r.stream)
		}
		c, err := decodeChange(vals, r.cols)
		if err != nil {
			return nil, fmt.Errorf("catch up stream %s: %w", r.stream, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		r.done = true
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return nil, r.b.wrap(err, "catch up stream %s", r.stream)
		}
		return nil, io.EOF
	}
	return out, nil
}

func (r *catchup) Close() error {
	if r.rows != nil {
		r.rows.Close()
	}
	return nil
}
