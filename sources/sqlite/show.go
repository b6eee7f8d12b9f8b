package sqlite

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// showColumns are the columns of SHOW TABLE STREAMS, one row per stream,
// ordered by name.
var showColumns = []cdc.Column{
	{Name: "name", Type: cdc.TypeString, NotNull: true},
	{Name: "table_name", Type: cdc.TypeString, NotNull: true},
	{Name: "mode", Type: cdc.TypeString, NotNull: true},
	{Name: "show_initial_rows", Type: cdc.TypeBoolean, NotNull: true},
	{Name: "offset", Type: cdc.TypeString, NotNull: true},
	{Name: "created_on", Type: cdc.TypeTimestamp, NotNull: true},
	{Name: "comment", Type: cdc.TypeString, NotNull: true},
	{Name: "oldest_unconsumed", Type: cdc.TypeTimestamp},       // commit time of the oldest change it has not consumed; NULL when none
	{Name: "stale_after", Type: cdc.TypeString, NotNull: true}, // its retention, e.g. 14d
	{Name: "stale", Type: cdc.TypeBoolean, NotNull: true},      // past its retention: reading it fails
}

func (b *Backend) showStreams(ctx context.Context) (*runner.ResultSet, error) {
	// A table renamed since the last statement that followed it is shown
	// under its name now (issue #17): follow it first, in a write
	// transaction only when there is one.
	if moved, err := movedTables(ctx, b.db); err != nil {
		return nil, err
	} else if len(moved) > 0 {
		if err := sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error { return reconcileAll(ctx, tx) }); err != nil {
			return nil, err
		}
	}
	streams, err := listStreams(ctx, b.db, "")
	if err != nil {
		return nil, err
	}
	rs := &runner.ResultSet{Columns: showColumns, Rows: [][]any{}}
	for _, s := range streams {
		row, err := showRow(ctx, b.db, s)
		if err != nil {
			return nil, err
		}
		rs.Rows = append(rs.Rows, row)
	}
	return rs, nil
}

// showRow is a stream's row of SHOW TABLE STREAMS, read through q: a
// caller inside a read transaction passes it, so that the row is of the
// same snapshot and the read needs no second connection (the file's
// Handle may have one read connection, which the transaction holds).
func showRow(ctx context.Context, q sqlitex.Querier, s streamRow) ([]any, error) {
	var oldest any
	if c, ok, err := lookupTracking(ctx, q, s.table); err != nil {
		return nil, err
	} else if ok {
		if _, exists, err := sqlitex.TableName(ctx, q, c.log); err == nil && exists {
			at, pending, err := oldestUnconsumed(ctx, q, c.log, s)
			if err != nil {
				return nil, err
			}
			if pending {
				oldest = at
			}
		}
	}
	return []any{s.name, s.table, s.mode, s.showInitial, s.pos.String(), s.created, s.comment,
		oldest, runner.FormatRetention(s.staleAfter), !s.staleSince.IsZero()}, nil
}

// describeColumns are the columns of DESCRIBE TABLE STREAM: one row, the
// SHOW columns plus pending_changes (the number of changes a read now
// returns) and id (the incarnation ID that checkpoints refer to).
var describeColumns = append(append([]cdc.Column(nil), showColumns...),
	cdc.Column{Name: "pending_changes", Type: cdc.TypeBigInt, NotNull: true},
	cdc.Column{Name: "id", Type: cdc.TypeString, NotNull: true},
)

func (b *Backend) describeStream(ctx context.Context, name string) (*runner.ResultSet, error) {
	if err := b.prepare(ctx, name); err != nil {
		return nil, fmt.Errorf("describe table stream: %w", err)
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("describe table stream %s: %w", name, err)
	}
	defer tx.Rollback()
	info, err := b.streamInfo(ctx, tx, name)
	if err != nil {
		return nil, fmt.Errorf("describe table stream: %w", err)
	}
	r, err := lookupStream(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	to, err := lastSeq(ctx, tx, logTable(info.Table))
	if err != nil {
		return nil, err
	}
	q, args, err := changesQuery(info, info.Offset, position{seq: to}.offset(), false)
	if err != nil {
		return nil, fmt.Errorf("describe table stream %s: %w", name, err)
	}
	var pending int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (`+q+`)`, args...).Scan(&pending); err != nil {
		return nil, fmt.Errorf("describe table stream %s: count pending changes: %w", name, err)
	}
	row, err := showRow(ctx, tx, r)
	if err != nil {
		return nil, err
	}
	return &runner.ResultSet{Columns: describeColumns, Rows: [][]any{append(row, pending, r.id)}}, nil
}
