package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// DefaultBatchSize is the batch size of a read when ReadOptions leaves it 0.
const DefaultBatchSize = 1000

// DefaultBatchBytes bounds a batch by an estimate of its decoded size
// (rowBytes) when ReadOptions.BatchBytes is 0: a run holds a few batches
// at once (the one read ahead, the sink's encoding of the one it writes),
// and 100,000 changes of a cross-database run peaked at 246 MB.
const DefaultBatchBytes = 8 << 20

// batchBytes returns opt's byte bound of a batch.
func batchBytes(opt runner.ReadOptions) int {
	if opt.BatchBytes > 0 {
		return opt.BatchBytes
	}
	return DefaultBatchBytes
}

// rowBytes estimates the memory of the current row of rows once decoded
// into a cdc.Change: its values' bytes as the server sent them, plus what
// Go spends per value (an interface and its box) and per change.
func rowBytes(rows pgx.Rows) int {
	n := 96
	for _, v := range rows.RawValues() {
		n += len(v) + 40
	}
	return n
}

// readPoint fixes the read point of a read in tx, which must be a
// REPEATABLE READ transaction that has run no statement yet (its first
// statement takes the snapshot). It checks the offset belongs to this
// cluster and is not older than the purged log, refuses a STANDARD read
// of a table whose primary key is INITIALLY DEFERRED (ErrDeferredKey),
// and returns the tracked table, the parsed from position (nil for the
// zero offset) and the read point.
func (b *Backend) readPoint(ctx context.Context, tx pgx.Tx, s *runner.StreamInfo, from cdc.Offset) (*Tracked, *Position, Position, error) {
	return b.readPointWith(ctx, tx, s, from, false)
}

// readPointWith is readPoint; with noVersions (a read that reports no
// __commit_version, queryOptions.fromTable) it narrows the read point with
// max(__txid) alone, which the log's index on __txid answers without a
// scan, and estimates the window's rows from the log's size (as the
// planner does) instead of bounding its __seq: the position then has no
// seq base, and a read that does need versions ranks them instead.
func (b *Backend) readPointWith(ctx context.Context, tx pgx.Tx, s *runner.StreamInfo, from cdc.Offset, noVersions bool) (*Tracked, *Position, Position, error) {
	return b.readPointOf(ctx, tx, s, nil, from, noVersions)
}

// readPointOf is readPointWith; a non-nil t is the stream's tracked table
// as describeStream returned it in tx (its key and change log checked),
// which is then not read and checked again (a pushed-down run describes
// the stream first: this saves it a dozen catalog queries).
func (b *Backend) readPointOf(ctx context.Context, tx pgx.Tx, s *runner.StreamInfo, t *Tracked, from cdc.Offset, noVersions bool) (*Tracked, *Position, Position, error) {
	var snap, sys string
	if err := tx.QueryRow(ctx, `SELECT pg_current_snapshot()::text, (SELECT system_identifier::text FROM pg_control_system())`).Scan(&snap, &sys); err != nil {
		return nil, nil, Position{}, b.wrap(err, "read snapshot")
	}
	if t == nil {
		tt, ok, err := b.tracked(ctx, tx, s.Table)
		if err != nil {
			return nil, nil, Position{}, err
		}
		if !ok {
			return nil, nil, Position{}, fmt.Errorf("%w: %s (stream %s)", ErrNotTracked, sinkpg.Quote(s.Table), s.Name)
		}
		if err := checkKey(s, tt); err != nil {
			return nil, nil, Position{}, err
		}
		if err := b.checkLog(ctx, tx, tt); err != nil {
			return nil, nil, Position{}, err
		}
		t = tt
	}
	if err := checkTriggers(ctx, tx, t, true); err != nil {
		return nil, nil, Position{}, b.wrap(err, "read table stream %s", s.Name)
	}
	if b.NetChanges(s) && t.Table.KeyDeferred {
		return nil, nil, Position{}, deferredKeyError(t.Table)
	}
	now := Position{System: sys, Snap: snap}
	if err := checkFutureRows(ctx, tx, t, now.Xmax()); err != nil {
		return nil, nil, Position{}, b.wrap(err, "read table stream %s", s.Name)
	}
	fp, has, err := OffsetPosition(from)
	if err != nil {
		return nil, nil, Position{}, fmt.Errorf("stream %s: %w", s.Name, err)
	}
	var fromPos *Position
	if has {
		fromPos = &fp
	}
	if n, err := countExtraRows(ctx, tx, t, fromPos, now); err != nil {
		return nil, nil, Position{}, b.wrap(err, "read table stream %s", s.Name)
	} else if n > 0 {
		return nil, nil, Position{}, fmt.Errorf("stream %s: %w", s.Name, extraRowsError(t, n))
	}
	if !has {
		now.Batch = 1
		return t, nil, now, nil
	}
	switch {
	case fp.System != sys:
		return nil, nil, Position{}, fmt.Errorf("%w: stream %s's offset was taken on cluster %s, this is cluster %s (a different server, or one restored from another cluster's backup); recreate the stream",
			ErrClusterMismatch, s.Name, fp.System, sys)
	case fp.Xmax() > now.Xmax():
		return nil, nil, Position{}, fmt.Errorf("%w: stream %s's offset (snapshot %s) is ahead of this cluster (snapshot %s): the cluster was restored to an earlier point; recreate the stream",
			ErrClusterMismatch, s.Name, fp.Snap, now.Snap)
	}
	var cur string
	if err := tx.QueryRow(ctx, streamPositionSQL, s.Name, s.ID).Scan(&cur); err != nil {
		return nil, nil, Position{}, fmt.Errorf("%w: stream %s was dropped or recreated (%v)", runner.ErrOffsetMoved, s.Name, err)
	}
	if cp, err := ParsePosition(cur); err == nil && !Covers(fp, cp) {
		return nil, nil, Position{}, fmt.Errorf("%w: reading stream %s from %s, behind its offset %s: another run consumed the changes in between and the change log may no longer hold them; to go on, give this job a stream of its own (CREATE TABLE STREAM), drop its target and run sluice backfill on the job",
			ErrPurged, s.Name, fp, cp)
	}
	// The read point: the transactions below the highest txid in the
	// window (or the old xmax) that are complete in the new snapshot are
	// visible; the ones still running stay in xip. It depends on the table's
	// changes, not on unrelated activity in the cluster.
	var maxTxid, minSeq, maxSeq *int64
	var estimate, tableRows int64
	if noVersions {
		if err := tx.QueryRow(ctx, windowTopQuery(t, &fp, now)).Scan(&maxTxid, &estimate, &tableRows); err != nil {
			return nil, nil, Position{}, b.wrap(err, "read table stream %s", s.Name)
		}
	} else if err := tx.QueryRow(ctx, windowBoundsQuery(t, &fp, now)).Scan(&maxTxid, &minSeq, &maxSeq); err != nil {
		return nil, nil, Position{}, b.wrap(err, "read table stream %s", s.Name)
	}
	xmax := fp.Xmax()
	if maxTxid != nil && uint64(*maxTxid)+1 > xmax {
		xmax = uint64(*maxTxid) + 1
	}
	to := Position{System: sys, Batch: fp.Batch, Snap: snapshotText(xmax, now.Xip()), windowRows: estimate, tableRows: tableRows, noLogRows: maxTxid == nil}
	if minSeq != nil && maxSeq != nil {
		to.windowRows = *maxSeq - *minSeq + 1
		if *maxSeq-*minSeq < maxSeqSpan {
			to.hasSeqBase, to.seqBase = true, *minSeq-1
		}
	}
	if to.Snap == fp.Snap && !fp.Initial {
		return t, &fp, fp, nil // nothing new: the read point stays
	}
	to.Batch = fp.Batch + 1
	return t, &fp, to, nil
}

// maxSeqSpan bounds the __seq span (max - min) of a window whose
// __commit_version is (batch << 32) + (__seq - seqBase): below it the
// offsets stay within 1 .. 2^32-1. A wider window falls back to the dense
// rank of __seq.
const maxSeqSpan = 1<<32 - 1

// windowBoundsQuery is the query of readPoint that narrows the read point
// (max(__txid) of the window) and bounds the window's __seq (min, max),
// for the version offsets of ChangesQuery.
func windowBoundsQuery(t *Tracked, from *Position, now Position) string {
	return fmt.Sprintf(`SELECT max(l.__txid)::text::bigint, min(l.__seq), max(l.__seq) FROM %s l WHERE %s`, t.LogRef(), WindowPredicate("l.__txid", from, now))
}

// windowTopQuery is readPointWith's query without versions: the window's
// max(__txid) (PostgreSQL reads it from the top of the __txid index), and
// the log's and the table's rows estimated as the planner does, from
// their size and their rows per page at the last ANALYZE (50 per page
// before one).
func windowTopQuery(t *Tracked, from *Position, now Position) string {
	estimate := func(rel string) string {
		return fmt.Sprintf(`(SELECT (CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 50 END
          * pg_relation_size(c.oid) / current_setting('block_size')::float8)::bigint FROM pg_class c WHERE c.oid = %s::regclass)`, sinkpg.Literal(rel))
	}
	return fmt.Sprintf(`SELECT (SELECT max(l.__txid)::text::bigint FROM %[1]s l WHERE %[2]s),
  %[3]s,
  %[4]s`,
		t.LogRef(), WindowPredicate("l.__txid", from, now), estimate(t.LogRef()), estimate(sinkpg.Quote(t.Table.Name)))
}

// snapshotText renders the pg_snapshot with the given xmax whose xip list
// is the ids of running below xmax.
func snapshotText(xmax uint64, running []uint64) string {
	var xip []string
	xmin := xmax
	for _, x := range running {
		if x < xmax {
			xip = append(xip, strconv.FormatUint(x, 10))
			xmin = min(xmin, x)
		}
	}
	return fmt.Sprintf("%d:%d:%s", xmin, xmax, strings.Join(xip, ","))
}

// Covers reports whether every transaction visible in snapshot s is also
// visible in f (f is at or after s).
func Covers(f, s Position) bool {
	if s.Xmax() > f.Xmax() {
		return false
	}
	sx := map[uint64]bool{}
	for _, x := range s.Xip() {
		sx[x] = true
	}
	for _, x := range f.Xip() {
		if x < s.Xmax() && !sx[x] {
			return false
		}
	}
	return true
}

// NetChanges reports whether reads of s hold the net change per primary
// key (runner.NetChangeSource): every stream but an APPEND_ONLY one.
func (b *Backend) NetChanges(s *runner.StreamInfo) bool { return s.Mode != dsl.ModeAppendOnly }

// Changes opens a read of s after from (runner.Source). The read runs in a
// REPEATABLE READ, READ ONLY transaction on one pooled connection, held
// until Close; rows stream from ChangesQuery, or with
// opt.OmitUpdateBefore from its variant without UPDATE_BEFORE and without
// the final ORDER BY (the reader then counts one omitted UPDATE_BEFORE per
// UPDATE_AFTER, Omitted).
func (b *Backend) Changes(ctx context.Context, s *runner.StreamInfo, from cdc.Offset, opt runner.ReadOptions) (runner.ChangeReader, error) {
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, b.wrap(err, "begin read of %s", s.Name)
	}
	if err := lockLog(ctx, tx, s.Table); err != nil {
		_ = tx.Rollback(ctx)
		return nil, b.wrap(err, "lock the change log of %s", s.Name)
	}
	t, fp, to, err := b.readPoint(ctx, tx, s, from)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	// Rows come in the table's columns as of the read's snapshot, which
	// must be the ones s (and the run's projection) describes.
	if err := runner.PlanStaleError(s.Name, s.Table, s.TableSchema, t.Table.Schema()); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	r := &reader{b: b, tx: tx, ctx: context.WithoutCancel(ctx), point: to.Offset(), batch: opt.BatchSize, table: t, stream: s.Name, omitted: map[cdc.Op]int64{}}
	r.maxBytes = batchBytes(opt)
	if r.batch <= 0 {
		r.batch = DefaultBatchSize
	}
	if fp != nil && fp.Snap == to.Snap && !fp.Initial {
		r.done = true
		return r, nil
	}
	// Without UPDATE_BEFORE the read is for a merge, which orders by
	// version itself: the rows come in key order, as the window sorted
	// them (no second sort, and the merge then touches the target in key
	// order).
	q := changesQuery(t, s, fp, to, queryOptions{ordered: !opt.OmitUpdateBefore, base: literalBase(to), afterOnly: opt.OmitUpdateBefore})
	r.countOmitted = opt.OmitUpdateBefore
	b.log.Debug("read table stream", "stream", s.Name, "from", from.String(), "to", to.String())
	if _, err := tx.Exec(ctx, sinkpg.WorkMemSQL(to.windowRows)); err != nil {
		_ = tx.Rollback(ctx)
		return nil, b.wrap(err, "read table stream %s", s.Name)
	}
	r.rows, err = tx.Query(ctx, q)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, b.wrap(err, "read table stream %s", s.Name)
	}
	return r, nil
}

// reader is a ChangeReader over one REPEATABLE READ transaction.
type reader struct {
	b     *Backend
	tx    pgx.Tx
	ctx   context.Context // for Close: the Changes context without its cancellation
	rows  pgx.Rows
	point cdc.Offset
	batch int
	// maxBytes bounds a batch's rows as sent by the server (batchBytes).
	maxBytes int
	table    *Tracked
	stream   string
	done     bool
	// countOmitted: the query leaves UPDATE_BEFORE out; each UPDATE_AFTER
	// returned counts one omitted UPDATE_BEFORE in omitted.
	countOmitted bool
	omitted      map[cdc.Op]int64
}

// Omitted returns the changes the read left out, by type
// (runner.OmittingReader).
func (r *reader) Omitted() map[cdc.Op]int64 { return r.omitted }

func (r *reader) ReadPoint() cdc.Offset { return r.point }

// Next returns up to the batch size of changes, io.EOF after the last.
func (r *reader) Next(ctx context.Context) ([]cdc.Change, error) {
	if r.done || r.rows == nil {
		return nil, io.EOF
	}
	cols := r.table.Table.Columns
	var out []cdc.Change
	size := 0
	for len(out) < r.batch && size < r.maxBytes && r.rows.Next() {
		size += rowBytes(r.rows)
		vals, err := r.rows.Values()
		if err != nil {
			return nil, r.b.wrap(err, "read table stream %s", r.stream)
		}
		c, err := decodeChange(vals, cols)
		if err != nil {
			return nil, fmt.Errorf("read table stream %s: %w", r.stream, err)
		}
		if r.countOmitted && c.Op == cdc.OpUpdateAfter {
			r.omitted[cdc.OpUpdateBefore]++
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		r.done = true
		if err := r.rows.Err(); err != nil {
			return nil, r.b.wrap(err, "read table stream %s", r.stream)
		}
		return nil, io.EOF
	}
	return out, nil
}

// decodeChange turns a ChangesQuery row into a cdc.Change.
func decodeChange(vals []any, cols []sinkpg.Column) (cdc.Change, error) {
	var c cdc.Change
	ct, _ := vals[0].(string)
	op, err := cdc.ParseOp(ct)
	if err != nil {
		return c, err
	}
	c.Op = op
	ver, ok := vals[1].(int64)
	if !ok {
		return c, fmt.Errorf("__commit_version is %T", vals[1])
	}
	c.CommitVersion = ver
	ts, _ := vals[2].(time.Time)
	c.CommitTime = ts.UTC()
	c.Row = make([]any, len(cols))
	for i, col := range cols {
		v, err := sinkpg.Decode(vals[3+i], col.Type)
		if err != nil {
			var ve *cdc.ValueError
			if errors.As(err, &ve) {
				ve.Column = col.Name
			}
			return c, err
		}
		c.Row[i] = v
	}
	return c, nil
}

// Close ends the read transaction.
func (r *reader) Close() error {
	if r.rows != nil {
		r.rows.Close()
	}
	return r.tx.Rollback(r.ctx)
}
