package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// DefaultBatchSize is the batch size of a read whose ReadOptions.BatchSize
// is not positive.
const DefaultBatchSize = 1000

// Stream implements runner.Source: it describes the table stream src
// names, with the table's current schema. When DDL changed the table (or
// renamed it) since its capture was installed, it first re-installs the
// capture in a write transaction of its own (syncCapture), so that a run
// reads every column the table has now. It returns an error wrapping
// runner.ErrNoStream when there is no such stream, and ErrCaptureLost when
// the table was dropped or re-created (the error says how to go on).
//
// The stream and its table's registration are read once: a fresh capture
// (the usual case) is described from those reads, and only a stale one,
// re-installed, is read again.
func (b *Backend) Stream(ctx context.Context, src plan.Source) (*runner.StreamInfo, error) {
	r, err := lookupStream(ctx, b.db, src.Stream)
	if err != nil {
		return nil, err
	}
	c, tracked, err := lookupTracking(ctx, b.db, r.table)
	if err != nil {
		return nil, err
	}
	if tracked {
		st, _, err := b.captureStatus(ctx, b.db, c)
		if err != nil {
			return nil, err
		}
		if st == capStale {
			if err := sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
				return syncStream(ctx, tx, src.Stream)
			}); err != nil {
				return nil, err
			}
			return b.streamInfo(ctx, b.db, src.Stream)
		}
	}
	return b.describe(ctx, b.db, r, c, tracked)
}

// prepare re-installs the capture of stream's table if it is stale, in a
// write transaction taken only then.
func (b *Backend) prepare(ctx context.Context, stream string) error {
	r, err := lookupStream(ctx, b.db, stream)
	if err != nil {
		return nil // streamInfo reports it
	}
	c, tracked, err := lookupTracking(ctx, b.db, r.table)
	if err != nil || !tracked {
		return err
	}
	if st, _, err := b.captureStatus(ctx, b.db, c); err != nil || st != capStale {
		return err
	}
	return sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		return syncStream(ctx, tx, stream)
	})
}

// syncStream re-installs the capture of stream's table when stale; it
// runs in a write transaction.
func syncStream(ctx context.Context, tx sqlitex.Querier, stream string) error {
	r, err := lookupStream(ctx, tx, stream)
	if err != nil {
		return err
	}
	c, tracked, err := lookupTracking(ctx, tx, r.table)
	if err != nil || !tracked {
		return err
	}
	if _, err := syncCapture(ctx, tx, c); err != nil {
		return fmt.Errorf("table stream %s: %w", r.name, err)
	}
	return nil
}

// streamInfo describes stream name as q sees it, without writing: a stale
// capture (DDL since it was installed) is ErrSchemaChanged, a lost one
// ErrCaptureLost.
func (b *Backend) streamInfo(ctx context.Context, q sqlitex.Querier, name string) (*runner.StreamInfo, error) {
	r, err := lookupStream(ctx, q, name)
	if err != nil {
		return nil, err
	}
	c, tracked, err := lookupTracking(ctx, q, r.table)
	if err != nil {
		return nil, err
	}
	return b.describe(ctx, q, r, c, tracked)
}

// describe is streamInfo of stream r, whose table's registration is c
// (tracked false: none), as read on q.
func (b *Backend) describe(ctx context.Context, q sqlitex.Querier, r streamRow, c captured, tracked bool) (*runner.StreamInfo, error) {
	if !tracked {
		return nil, fmt.Errorf("table stream %s: %w: %s", r.name, ErrNotTracked, r.table)
	}
	switch st, _, err := b.captureStatus(ctx, q, c); {
	case err != nil:
		return nil, err
	case st == capLost:
		return nil, fmt.Errorf("table stream %s: %w", r.name, lostError(ctx, q, c, r.name))
	case st == capStale:
		return nil, errNotFresh(r.name, r.table)
	}
	if !r.staleSince.IsZero() {
		return nil, runner.StaleError(r.name, r.table, r.staleAfter, r.staleSince)
	}
	schema, ok, err := sqlitex.TableSchema(ctx, q, r.table)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("table stream %s: %w: %s", r.name, ErrNoTable, r.table)
	}
	return &runner.StreamInfo{
		Name:            r.name,
		Table:           r.table,
		Mode:            r.mode,
		ShowInitialRows: r.showInitial,
		Comment:         r.comment,
		Created:         r.created,
		ID:              r.id,
		TableSchema:     schema,
		Offset:          r.pos.offset(),
		StaleAfter:      r.staleAfter,
	}, nil
}

// sameStream checks, in a read's snapshot, that the stream and its table
// are still what s describes (same incarnation, same table, same columns
// and key) and that capture covers the table as it is: the read point of
// such a snapshot is an offset from which every later change carries every
// column (doc.go, "Schema changes").
func (b *Backend) sameStream(ctx context.Context, q sqlitex.Querier, s *runner.StreamInfo) error {
	cur, err := b.streamInfo(ctx, q, s.Name)
	if err != nil {
		return err
	}
	if cur.ID != s.ID {
		return fmt.Errorf("%w: stream %s was dropped and created again", runner.ErrNoStream, s.Name)
	}
	if cur.Table != s.Table || !slices.Equal(cur.TableSchema.Names(), s.TableSchema.Names()) || !slices.Equal(cur.TableSchema.Key, s.TableSchema.Key) {
		return errNotFresh(s.Name, s.Table)
	}
	return nil
}

// Changes implements runner.Source. It opens a read transaction, fixes the
// read point (the last change-log seq visible in it), and streams the
// result of ChangesQuery(s, from, readPoint) in batches of at most
// opt.BatchSize changes. Change.Row is aligned with s.TableSchema and holds
// canonical values (package cdc); CommitTime is UTC with millisecond
// precision. With opt.OmitUpdateBefore a STANDARD read leaves out each
// update's UPDATE_BEFORE and the final ORDER BY (no sort of the read; the
// merge sink orders by __commit_version itself) and counts one omitted
// UPDATE_BEFORE per UPDATE_AFTER it returns (runner.OmittingReader). The
// reader holds a connection until Close. Errors: bad offsets wrap
// cdc.ErrBadOffset.
func (b *Backend) Changes(ctx context.Context, s *runner.StreamInfo, from cdc.Offset, opt runner.ReadOptions) (runner.ChangeReader, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", s.Name, err)
	}
	r, err := b.openRead(ctx, tx, s, from, opt)
	if err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("read stream %s: %w", s.Name, err)
	}
	return r, nil
}

var _ runner.NetChangeSource = (*Backend)(nil)

var _ runner.OmittingReader = (*reader)(nil)

// NetChanges implements runner.NetChangeSource: a read of a STANDARD
// stream holds the net change per primary key (at most one change per key
// besides UPDATE_BEFORE); an APPEND_ONLY read holds every insert.
func (b *Backend) NetChanges(s *runner.StreamInfo) bool { return s.Mode != "APPEND_ONLY" }

func (b *Backend) openRead(ctx context.Context, tx *sql.Tx, s *runner.StreamInfo, from cdc.Offset, opt runner.ReadOptions) (*reader, error) {
	if err := b.sameStream(ctx, tx, s); err != nil {
		return nil, err
	}
	to, err := lastSeq(ctx, tx, logTable(s.Table))
	if err != nil {
		return nil, err
	}
	f, err := parseOffset(from)
	if err != nil {
		return nil, err
	}
	if f.seq > to {
		return nil, futureOffsetError(s, from, to)
	}
	if st, err := parseOffset(s.Offset); err == nil && (f.seq < st.seq || f.initial && !st.initial) {
		return nil, fmt.Errorf("%w: reading stream %s from %s, behind its offset %s: another job consumed the changes in between and the change log may no longer hold them (use one stream per job)", ErrBehindOffset, s.Name, from, s.Offset)
	}
	if err := checkAnchor(ctx, tx, s, from, f); err != nil {
		return nil, err
	}
	rp, err := readPointFrom(ctx, tx, s, f, to)
	if err != nil {
		return nil, err
	}
	readPoint := rp.offset()
	if err := checkAppendAbsent(ctx, tx, s, from, readPoint); err != nil {
		return nil, err
	}
	q, args, err := changesQueryWith(s, from, readPoint, gen{afterOnly: opt.OmitUpdateBefore, unordered: opt.OmitUpdateBefore})
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	n := opt.BatchSize
	if n <= 0 {
		n = DefaultBatchSize
	}
	return &reader{tx: tx, rows: rows, schema: s.TableSchema, readPoint: readPoint, batch: n,
		countOmitted: opt.OmitUpdateBefore && s.Mode != "APPEND_ONLY", omitted: map[cdc.Op]int64{}}, nil
}

type reader struct {
	tx        *sql.Tx
	rows      *sql.Rows
	schema    cdc.Schema
	readPoint cdc.Offset
	batch     int
	done      bool
	// countOmitted: the read leaves out UPDATE_BEFORE (OmitUpdateBefore);
	// each UPDATE_AFTER returned counts one omitted in omitted.
	countOmitted bool
	omitted      map[cdc.Op]int64
}

func (r *reader) ReadPoint() cdc.Offset { return r.readPoint }

// Omitted implements runner.OmittingReader.
func (r *reader) Omitted() map[cdc.Op]int64 { return r.omitted }

func (r *reader) Next(ctx context.Context) ([]cdc.Change, error) {
	if r.done {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cols := r.schema.Columns
	out := make([]cdc.Change, 0, min(r.batch, 256))
	for len(out) < r.batch {
		if !r.rows.Next() {
			if err := r.rows.Err(); err != nil {
				return nil, fmt.Errorf("read changes: %w", err)
			}
			r.done = true
			break
		}
		ch, err := scanChange(r.rows, cols, r.schema)
		if err != nil {
			return nil, err
		}
		if r.countOmitted && ch.Op == cdc.OpUpdateAfter {
			r.omitted[cdc.OpUpdateBefore]++
		}
		out = append(out, ch)
	}
	if len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// scanChange reads one row of ChangesQuery, whose table columns are cols
// of schema. A value that does not decode as its column's type (SQLite
// keeps text in a REAL column) stays in the row as stored (text for
// text, []byte for a blob): the sink's check of each value refuses it
// with the row's key and the column (cdc.ValueError), which a job with a
// dead-letter table sets aside.
func scanChange(rows *sql.Rows, cols []cdc.Column, _ cdc.Schema) (cdc.Change, error) {
	vals := make([]any, 3+len(cols))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return cdc.Change{}, fmt.Errorf("read changes: %w", err)
	}
	op, err := cdc.ParseOp(fmt.Sprint(vals[0]))
	if err != nil {
		return cdc.Change{}, err
	}
	ver, ok := vals[1].(int64)
	if !ok {
		return cdc.Change{}, fmt.Errorf("read changes: bad commit version %v", vals[1])
	}
	ts, err := sqlitex.Decode(vals[2], cdc.TypeTimestamp)
	if err != nil {
		return cdc.Change{}, fmt.Errorf("read changes: commit timestamp: %w", err)
	}
	row := vals[3:]
	for i, v := range row {
		d, err := sqlitex.Decode(v, cols[i].Type)
		var ve *cdc.ValueError
		if errors.As(err, &ve) {
			// SQLite stores what the application gives it ('abc' in a
			// REAL column). The stored value goes on as it is: the sink
			// refuses it, naming the row's key and the column, or puts
			// it in the job's dead-letter table; a read that failed here
			// would stop every job on the stream with no way past it.
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			row[i] = v
			continue
		}
		if err != nil {
			return cdc.Change{}, fmt.Errorf("read changes: column %q: %w", cols[i].Name, err)
		}
		row[i] = d
	}
	return cdc.Change{Op: op, CommitVersion: ver, CommitTime: ts.(time.Time).UTC(), Row: row}, nil
}

func (r *reader) Close() error {
	if r.rows != nil {
		r.rows.Close()
	}
	err := r.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		err = nil
	}
	return err
}

// Advance implements runner.Source: in one write transaction it sets the
// stream's offset to to if it is still from (else an error wrapping
// runner.ErrOffsetMoved; runner.ErrNoStream if the stream is gone), then
// purges the change-log rows every stream on the table has consumed.
func (b *Backend) Advance(ctx context.Context, s *runner.StreamInfo, from, to cdc.Offset) error {
	return sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		return b.advance(ctx, tx, s, from, to)
	})
}

func (b *Backend) advance(ctx context.Context, tx sqlitex.Querier, s *runner.StreamInfo, from, to cdc.Offset) error {
	f, t, err := parseRange(from, to)
	if err != nil {
		return err
	}
	if t.initial || t.seq < f.seq {
		return fmt.Errorf("advance stream %s: %w: %s is not a read point after %s", s.Name, cdc.ErrBadOffset, to, from)
	}
	res, err := tx.ExecContext(ctx, `UPDATE sluice_streams SET "offset" = ? WHERE name = ? AND id = ? AND "offset" = ?`,
		t.String(), s.Name, s.ID, f.String())
	if err != nil {
		return fmt.Errorf("advance stream %s: %w", s.Name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		cur, err := lookupStream(ctx, tx, s.Name)
		if err != nil {
			return fmt.Errorf("advance stream %s: %w", s.Name, err)
		}
		if cur.id != s.ID {
			return fmt.Errorf("advance stream %s: %w: the stream was dropped and created again", s.Name, runner.ErrNoStream)
		}
		return fmt.Errorf("advance stream %s from %s: %w (now at %s)", s.Name, from, runner.ErrOffsetMoved, cur.pos)
	}
	// The stream's table's log (retention.go: purgeTable).
	n, err := b.purgeTable(ctx, tx, s.Table)
	if err != nil {
		return err
	}
	b.log.DebugContext(ctx, "stream advanced", "stream", s.Name, "from", from.String(), "to", to.String(), "purged", n)
	return nil
}

// futureOffsetError is a read from an offset past the last change this
// database's log ever numbered (sqlite_sequence, which purging never moves
// back): the offset was taken on a later state of the file, which was then
// replaced by an earlier copy (a restored backup). Reading from it would
// skip the changes numbered again up to it, so the read refuses. It wraps
// cdc.ErrBadOffset and ErrRestored.
func futureOffsetError(s *runner.StreamInfo, from cdc.Offset, last int64) error {
	return fmt.Errorf("%w: %w: reading stream %s from %s, but the change log of %s has numbered only %d changes: the database was replaced by an earlier copy (a restored backup) after that offset was taken; nothing was read. To go on: run sluice backfill on the stream's jobs (the target may hold rows the restored database lacks: drop it first for an exact copy)",
		ErrRestored, cdc.ErrBadOffset, s.Name, from, s.Table, last)
}
