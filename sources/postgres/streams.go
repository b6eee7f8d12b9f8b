package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// CreateStream creates a table stream (CREATE [OR REPLACE] TABLE STREAM
// [IF NOT EXISTS] …). The table must have change tracking
// (ErrNotTracked) and, for STANDARD, a primary key (ErrNoPrimaryKey) that
// is not INITIALLY DEFERRED (ErrDeferredKey); an existing name is
// ErrStreamExists unless OR REPLACE / IF NOT EXISTS.
//
// The first stream on a table switches its capture on in the same
// transaction as the stream's row: it takes SHARE ROW EXCLUSIVE on the
// table (bounded waits, locks.go), which waits for the application's
// transactions that wrote the table to end and keeps new writes out until
// it commits, brings the log and function in line with the table's
// columns, empties the log and creates and enables the triggers
// (enableIn). The stream's offset is the snapshot taken after that, in
// the same transaction: a change committed before it is not in the
// stream, a change of a transaction still running is (that transaction
// writes the table after the triggers are committed), and so is every
// later change. A SHOW_INITIAL_ROWS stream's first read returns the
// table's rows at that read as inserts.
func (b *Backend) CreateStream(ctx context.Context, st *dsl.CreateStream) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	if err := b.followRenames(ctx); err != nil {
		return err
	}
	mode := st.Mode
	if mode == "" {
		mode = dsl.ModeStandard
	}
	var first bool
	lock := func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		first = false
		t, ok, err := b.trackedAs(ctx, tx, st.Table)
		if err != nil {
			return tableLock{mode: shareRowExcl}, err
		}
		if !ok {
			return tableLock{mode: shareRowExcl}, nil // the statement reports it
		}
		names, err := streamsOn(ctx, tx, t.Key)
		if err != nil || len(names) > 0 {
			return tableLock{mode: shareRowExcl}, err
		}
		first = true
		relid := t.Relid
		if relid == 0 {
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sinkpg.Quote(t.Table.Name)).Scan(&relid); err != nil {
				return tableLock{mode: shareRowExcl}, err
			}
		}
		return tableLock{relid, shareRowExcl, ""}, lockOid(ctx, tx, relid, shareRowExcl)
	}
	return b.wrap(b.notOwnerHint(ctx, st.Table, b.withTableLock(ctx, "create table stream "+st.Stream, sinkpg.Quote(st.Table), lock, func(tx pgx.Tx) error {
		t, ok, err := b.trackedAs(ctx, tx, st.Table)
		if err != nil {
			return err
		}
		if !ok {
			if _, exists, err := sinkpg.DescribeTable(ctx, tx, st.Table); err != nil {
				return err
			} else if !exists {
				return fmt.Errorf("%w: %s", ErrNoTable, sinkpg.Quote(st.Table))
			}
			return fmt.Errorf("%w: %s; enable it with ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true')", ErrNotTracked, sinkpg.Quote(st.Table), st.Table)
		}
		if mode == dsl.ModeStandard && len(t.Table.Key) == 0 {
			return fmt.Errorf("%w: %s; a STANDARD stream returns net changes per primary key — add one, or use 'TABLE_STREAM_MODE' = 'APPEND_ONLY'", ErrNoPrimaryKey, sinkpg.Quote(st.Table))
		}
		if mode == dsl.ModeStandard && t.Table.KeyDeferred {
			return deferredKeyError(t.Table)
		}
		var oldTable string
		err = tx.QueryRow(ctx, `SELECT table_name FROM sluice.streams WHERE name = $1`, st.Stream).Scan(&oldTable)
		exists := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		switch {
		case exists && st.IfNotExists:
			return nil
		case exists && !st.OrReplace:
			return fmt.Errorf("%w: %s (use CREATE OR REPLACE TABLE STREAM to recreate it)", ErrStreamExists, st.Stream)
		case exists:
			if _, err := tx.Exec(ctx, `DELETE FROM sluice.streams WHERE name = $1`, st.Stream); err != nil {
				return err
			}
			if oldTable != t.Key {
				// The replaced stream read another table: its capture goes
				// off if that was its last stream.
				if err := b.lastStreamGone(ctx, tx, oldTable); err != nil {
					return err
				}
			}
		}
		if first {
			if _, err := b.enableIn(ctx, tx, t.Table.Name, true); err != nil {
				return fmt.Errorf("switch on the change capture of %s: %w", sinkpg.Quote(t.Table.Name), err)
			}
		}
		sys, err := b.systemID(ctx, tx)
		if err != nil {
			return err
		}
		// After the triggers (READ COMMITTED: this statement's snapshot).
		var snap string
		if err := tx.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
			return err
		}
		p := Position{System: sys, Snap: snap, Initial: st.ShowInitialRows}
		staleAfter := st.StaleAfter
		if staleAfter <= 0 {
			staleAfter = runner.DefaultStaleAfter
		}
		_, err = tx.Exec(ctx, `INSERT INTO sluice.streams (name, table_name, mode, show_initial_rows, comment, id, position, stale_after)
			VALUES ($1, $2, $3, $4, $5, gen_random_uuid()::text, $6, $7)`,
			st.Stream, t.Key, mode, st.ShowInitialRows, st.Comment, p.String(), int64(staleAfter/time.Second))
		if err == nil {
			b.log.Info("table stream created", "stream", st.Stream, "table", st.Table, "mode", mode, "capture_switched_on", first)
		}
		return err
	})), "create table stream %s", st.Stream)
}

// DropStream drops a stream; a missing one is an error wrapping
// runner.ErrNoStream unless ifExists. Log rows no other stream needs are
// purged. Dropping the last stream on a table switches its capture off
// in the same transaction (lastStreamGone): it takes ACCESS EXCLUSIVE on
// the table (DROP TRIGGER needs it; bounded waits, locks.go), drops the
// triggers and empties the log.
func (b *Backend) DropStream(ctx context.Context, name string, ifExists bool) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	if err := b.followRenames(ctx); err != nil {
		return err
	}
	lock := func(ctx context.Context, tx pgx.Tx) (tableLock, error) {
		var table string
		var others bool
		err := tx.QueryRow(ctx, `SELECT table_name, EXISTS (SELECT 1 FROM sluice.streams o WHERE o.table_name = s.table_name AND o.name <> s.name)
			FROM sluice.streams s WHERE name = $1`, name).Scan(&table, &others)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && others) {
			return tableLock{mode: accessExclusive}, nil
		}
		if err != nil {
			return tableLock{mode: accessExclusive}, err
		}
		relid, err := captureRelid(ctx, tx, table)
		if err != nil || relid == 0 {
			return tableLock{mode: accessExclusive}, err
		}
		return tableLock{relid, accessExclusive, sinkpg.Quote(table)}, lockOid(ctx, tx, relid, accessExclusive)
	}
	return b.wrap(b.withTableLock(ctx, "drop table stream "+name, "the table of stream "+name, lock, func(tx pgx.Tx) error {
		var table string
		err := tx.QueryRow(ctx, `DELETE FROM sluice.streams WHERE name = $1 RETURNING table_name`, name).Scan(&table)
		if errors.Is(err, pgx.ErrNoRows) {
			if ifExists {
				return nil
			}
			return fmt.Errorf("%w: %s", runner.ErrNoStream, name)
		}
		if err != nil {
			return err
		}
		if err := b.lastStreamGone(ctx, tx, table); err != nil {
			return err
		}
		return b.purge(ctx, tx, table)
	}), "drop table stream %s", name)
}

// captureRelid returns the oid of the table tracked as table (its
// tracking key) when it has capture triggers, 0 when it has none (or is
// gone).
func captureRelid(ctx context.Context, q sinkpg.Querier, table string) (uint32, error) {
	var relid *uint32
	err := q.QueryRow(ctx, `SELECT coalesce(t.relid, to_regclass(quote_ident(t.table_name))::oid) FROM sluice.tracking t WHERE t.table_name = $1`, table).Scan(&relid)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && relid == nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	have, err := presentTriggers(ctx, q, *relid)
	if err != nil || len(have) == 0 {
		return 0, err
	}
	return *relid, nil
}

// lastStreamGone switches the capture of the table tracked as table off
// when no stream is left on it: it drops its triggers (tx holds ACCESS
// EXCLUSIVE on the table, or takes it under the transaction's
// lock_timeout) and purges the whole log. A dropped table took its
// triggers with it.
func (b *Backend) lastStreamGone(ctx context.Context, tx pgx.Tx, table string) error {
	names, err := streamsOn(ctx, tx, table)
	if err != nil || len(names) > 0 {
		return err
	}
	t, ok, err := b.tracked(ctx, tx, table)
	if errors.Is(err, ErrTableDropped) || (err == nil && !ok) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.Relid == 0 {
		return nil // tracked by an earlier sluice without an oid: enabling tracking again turns it off
	}
	var qualified string
	if err := tx.QueryRow(ctx, `SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = $1`, t.Relid).Scan(&qualified); err != nil {
		return err
	}
	if err := setCapture(ctx, tx, t, qualified, false, false); err != nil {
		return fmt.Errorf("switch off the change capture of %s: %w", sinkpg.Quote(t.Table.Name), err)
	}
	b.log.Info("last table stream dropped: change capture switched off", "table", t.Table.Name)
	return b.purge(ctx, tx, table)
}

const streamColumns = `name, table_name, mode, show_initial_rows, comment, created_at, id, position, stale_after, stale_since`

// describeStreamSQL reads one stream by name (describeStream).
const describeStreamSQL = `SELECT ` + streamColumns + ` FROM sluice.streams WHERE name = $1`

// streamPositionSQL reads the offset of one incarnation of a stream (the
// purge check of a read, readPointOf).
const streamPositionSQL = `SELECT position FROM sluice.streams WHERE name = $1 AND id = $2`

func scanStream(row pgx.Row) (*runner.StreamInfo, error) {
	var s runner.StreamInfo
	var pos string
	var staleAfter int64
	var staleSince *time.Time
	if err := row.Scan(&s.Name, &s.Table, &s.Mode, &s.ShowInitialRows, &s.Comment, &s.Created, &s.ID, &pos, &staleAfter, &staleSince); err != nil {
		return nil, err
	}
	s.Created = s.Created.UTC()
	s.StaleAfter = time.Duration(staleAfter) * time.Second
	if staleSince != nil {
		s.StaleSince = staleSince.UTC()
	}
	s.Offset = cdc.SingleOffset(pos)
	return &s, nil
}

// ListStreams returns every stream, by name, without table schemas.
func (b *Backend) ListStreams(ctx context.Context) ([]*runner.StreamInfo, error) {
	if err := b.followRenames(ctx); err != nil {
		return nil, err
	}
	rows, err := b.pool.Query(ctx, `SELECT `+streamColumns+` FROM sluice.streams ORDER BY name`)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, b.wrap(err, "list table streams")
	}
	defer rows.Close()
	var out []*runner.StreamInfo
	for rows.Next() {
		s, err := scanStream(rows)
		if err != nil {
			return nil, b.wrap(err, "list table streams")
		}
		out = append(out, s)
	}
	return out, b.wrap(rows.Err(), "list table streams")
}

// Stream describes the job's source stream (runner.Source). When the
// table's columns changed since its change log was last brought in line
// with them (checkLog, logBehind), it first does that, as enabling
// tracking again does (followColumnsNow), so that the run reads every
// change written since the ALTER with every column, the new ones
// included.
func (b *Backend) Stream(ctx context.Context, src plan.Source) (*runner.StreamInfo, error) {
	s, t, err := b.describeStream(ctx, b.pool, src.Stream)
	if t != nil && t.Relid != 0 && renamedFrom(t.Key, t.Table.Name) {
		// The table was renamed: the catalog takes its new name first,
		// so the run, and what it reports, name it as it is now.
		if err := b.followRenames(ctx); err != nil {
			return nil, err
		}
		s, t, err = b.describeStream(ctx, b.pool, src.Stream)
	}
	behind := err != nil && s != nil && t != nil && errors.Is(err, runner.ErrPlanStale)
	if err != nil && !behind {
		return nil, err
	}
	if !behind {
		if behind, err = logBehind(ctx, b.pool, t); err != nil {
			return nil, b.wrap(err, "read table stream %s", s.Name)
		}
		if !behind {
			return s, nil
		}
	}
	if err := b.followColumnsNow(ctx, s, t); err != nil {
		return nil, err
	}
	s, _, err = b.describeStream(ctx, b.pool, src.Stream)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// describeStream reads a stream, its table schema and tracking. A missing
// stream wraps runner.ErrNoStream. When the change log lacks a column of
// the table (checkLog: an error wrapping runner.ErrPlanStale) the stream
// and tracking are returned with the error.
func (b *Backend) describeStream(ctx context.Context, q sinkpg.Querier, name string) (*runner.StreamInfo, *Tracked, error) {
	s, err := scanStream(q.QueryRow(ctx, describeStreamSQL, name))
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return nil, nil, fmt.Errorf("%w: %s (in %s)", runner.ErrNoStream, name, b.identity)
	}
	if err != nil {
		return nil, nil, b.wrap(err, "read table stream %s", name)
	}
	t, ok, err := b.tracked(ctx, q, s.Table)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s (stream %s is stale; enable tracking and recreate the stream)", ErrNotTracked, sinkpg.Quote(s.Table), name)
	}
	if !s.StaleSince.IsZero() {
		return nil, nil, runner.StaleError(s.Name, s.Table, s.StaleAfter, s.StaleSince)
	}
	if err := checkKey(s, t); err != nil {
		return nil, nil, err
	}
	if err := b.checkLog(ctx, q, t); err != nil {
		if errors.Is(err, runner.ErrPlanStale) {
			return s, t, err
		}
		return nil, nil, err
	}
	s.TableSchema = t.Table.Schema()
	return s, t, nil
}

// Advance moves the stream's offset from from to to (compare-and-set,
// runner.ErrOffsetMoved when it moved or the stream was recreated), then
// purges log rows every stream on the table has consumed, in a transaction
// of its own (purgeAfterCommit).
func (b *Backend) Advance(ctx context.Context, s *runner.StreamInfo, from, to cdc.Offset) error {
	if _, ok, err := OffsetPosition(to); err != nil || !ok {
		return fmt.Errorf("advance %s: %w", s.Name, errors.Join(err, errorIf(!ok && err == nil, ErrBadPosition)))
	}
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		return b.advance(ctx, tx, s, from, to)
	})
	if err != nil {
		return b.wrap(err, "advance table stream %s", s.Name)
	}
	b.purgeAfterCommit(ctx, s.Table)
	b.purgeStreamless(ctx)
	return nil
}

func errorIf(c bool, err error) error {
	if c {
		return err
	}
	return nil
}

// advance is Advance's compare-and-set inside tx (no purge).
func (b *Backend) advance(ctx context.Context, tx pgx.Tx, s *runner.StreamInfo, from, to cdc.Offset) error {
	fromPos, _ := from.Get("")
	toPos, _ := to.Get("")
	if fromPos == toPos {
		return nil
	}
	tag, err := tx.Exec(ctx, `UPDATE sluice.streams SET position = $1 WHERE name = $2 AND id = $3 AND position = $4`,
		toPos, s.Name, s.ID, fromPos)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s is no longer at %s", runner.ErrOffsetMoved, s.Name, from)
	}
	return nil
}

// purge deletes the log rows of table that every stream on it has
// consumed: rows of transactions visible in every stream's offset snapshot
// (all rows visible in the current snapshot when no stream remains). A
// read from an offset behind its stream's offset is refused (Covers), so
// no reader needs a purged row.
func (b *Backend) purge(ctx context.Context, tx pgx.Tx, table string) error {
	t, ok, err := b.trackedLog(ctx, tx, table)
	if errors.Is(err, ErrTableDropped) {
		return nil // disabling tracking removes the log
	}
	if err != nil || !ok {
		return err
	}
	positions, known, err := streamPositions(ctx, tx, table)
	if err != nil || !known {
		return err // unknown: leave the log alone; reads report the bad position
	}
	conds := []string{}
	var low uint64
	for i, p := range positions {
		if i == 0 || p.Xmax() < low {
			low = p.Xmax()
		}
		conds = append(conds, fmt.Sprintf("pg_visible_in_snapshot(__txid, '%s'::pg_snapshot)", p.Snap))
	}
	if len(positions) == 0 {
		conds = append(conds, "pg_visible_in_snapshot(__txid, pg_current_snapshot())")
	} else {
		conds = append([]string{fmt.Sprintf("__txid < '%d'::xid8", low)}, conds...)
	}
	tag, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE %s`, t.LogRef(), strings.Join(conds, " AND ")))
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n > 0 {
		b.log.Debug("change log purged", "table", table, "rows", n)
	}
	return nil
}

// showColumns are the columns of SHOW TABLE STREAMS (as on SQLite), one
// row per stream, ordered by name.
var showColumns = []cdc.Column{
	{Name: "name", Type: cdc.TypeString, NotNull: true},
	{Name: "table_name", Type: cdc.TypeString, NotNull: true},
	{Name: "mode", Type: cdc.TypeString, NotNull: true},
	{Name: "show_initial_rows", Type: cdc.TypeBoolean, NotNull: true},
	{Name: "offset", Type: cdc.TypeString, NotNull: true},
	{Name: "created_on", Type: cdc.TypeTimestamp, NotNull: true},
	{Name: "comment", Type: cdc.TypeString, NotNull: true},
	{Name: "oldest_unconsumed", Type: cdc.TypeTimestamp},       // time of the oldest change it has not consumed; NULL when none
	{Name: "stale_after", Type: cdc.TypeString, NotNull: true}, // its retention, e.g. 14d
	{Name: "stale", Type: cdc.TypeBoolean, NotNull: true},      // past its retention: reading it fails
}

// describeColumns are the columns of DESCRIBE TABLE STREAM: the SHOW
// columns plus pending_changes (the changes a read now returns) and id
// (the incarnation ID checkpoints refer to).
var describeColumns = append(append([]cdc.Column(nil), showColumns...),
	cdc.Column{Name: "pending_changes", Type: cdc.TypeBigInt, NotNull: true},
	cdc.Column{Name: "id", Type: cdc.TypeString, NotNull: true},
)

// showRow is a stream's row of SHOW TABLE STREAMS, read through q.
func (b *Backend) showRow(ctx context.Context, q sinkpg.Querier, s *runner.StreamInfo) ([]any, error) {
	var oldest any
	if p, ok, err := OffsetPosition(s.Offset); err == nil && ok && s.StaleSince.IsZero() {
		t, tracked, err := b.tracked(ctx, q, s.Table)
		if errors.Is(err, ErrTableDropped) || errors.Is(err, ErrNoTable) {
			// Reads report the drop, or the move out of the
			// search_path; the listing shows the stream without it.
			tracked, err = false, nil
		}
		if err != nil {
			return nil, err
		}
		if tracked {
			at, pending, err := oldestUnconsumed(ctx, q, t, p)
			if err != nil && !isUndefinedTable(err) {
				return nil, b.wrap(err, "oldest unconsumed change of %s", s.Name)
			}
			if pending {
				oldest = at.Truncate(time.Microsecond)
			}
		}
	}
	return []any{s.Name, s.Table, s.Mode, s.ShowInitialRows, s.Offset.String(), s.Created.UTC().Truncate(time.Microsecond), s.Comment,
		oldest, runner.FormatRetention(s.StaleAfter), !s.StaleSince.IsZero()}, nil
}

// showStreams is SHOW TABLE STREAMS.
func (b *Backend) showStreams(ctx context.Context) (*runner.ResultSet, error) {
	list, err := b.ListStreams(ctx)
	if err != nil {
		return nil, err
	}
	rs := &runner.ResultSet{Columns: showColumns, Rows: [][]any{}}
	for _, s := range list {
		row, err := b.showRow(ctx, b.pool, s)
		if err != nil {
			return nil, err
		}
		rs.Rows = append(rs.Rows, row)
	}
	return rs, nil
}

// describe is DESCRIBE TABLE STREAM: one row, counting the pending changes
// with ChangesQuery in a REPEATABLE READ transaction.
func (b *Backend) describe(ctx context.Context, name string) (*runner.ResultSet, error) {
	if err := b.followRenames(ctx); err != nil {
		return nil, err
	}
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, b.wrap(err, "describe table stream %s", name)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The first statement fixes the snapshot that readPoint reports.
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		return nil, b.wrap(err, "describe table stream %s", name)
	}
	s, _, err := b.describeStream(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	t, fp, to, err := b.readPoint(ctx, tx, s, s.Offset)
	if err != nil {
		return nil, err
	}
	var pending int64
	if fp == nil || fp.Snap != to.Snap || fp.Initial {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (`+ChangesQuery(t, s, fp, to)+`) AS c`).Scan(&pending); err != nil {
			return nil, b.wrap(err, "describe table stream %s: count pending changes", name)
		}
	}
	row, err := b.showRow(ctx, tx, s)
	if err != nil {
		return nil, err
	}
	return &runner.ResultSet{Columns: describeColumns, Rows: [][]any{append(row, pending, s.ID)}}, nil
}
