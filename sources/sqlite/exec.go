package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// Exec implements runner.Executor for every statement of package dsl:
//
//   - CREATE TABLE: declared types of sqlitex.DeclaredType, key columns NOT
//     NULL, PRIMARY KEY.
//   - DROP TABLE: also removes change capture; ErrStreamsExist while
//     streams read the table.
//   - ALTER TABLE … SET PROPERTIES ('change_tracking' = …): installs or
//     removes the capture triggers and change log (doc.go). ErrNoTable for
//     a missing table; disabling while streams exist is ErrStreamsExist,
//     naming them.
//   - CREATE / DROP TABLE STREAM: the catalog sluice_streams. ErrNotTracked
//     (saying how to enable tracking), ErrNoPrimaryKey for STANDARD on a
//     table without key, ErrStreamExists; a missing stream wraps
//     runner.ErrNoStream.
//   - SHOW TABLE STREAMS, DESCRIBE TABLE STREAM: a ResultSet (show.go).
//   - INSERT / UPDATE / DELETE / SELECT: translated for SQLite (dml.go);
//     SELECT returns a ResultSet.
//
// Statements that change things run in one write transaction each.
func (b *Backend) Exec(ctx context.Context, st dsl.Statement) (*runner.ResultSet, error) {
	switch s := st.(type) {
	case *dsl.CreateTable:
		return nil, b.createTable(ctx, s)
	case *dsl.DropTable:
		return nil, b.dropTable(ctx, s)
	case *dsl.SetChangeTracking:
		err := sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
			if s.Enabled {
				if err := enableTracking(ctx, tx, s.Table); err != nil {
					return err
				}
				// Enabling (again) purges what no stream can read: with no
				// stream on the table, everything logged since the last
				// purge.
				_, err := b.purgeAll(ctx, tx, false)
				return err
			}
			return disableTracking(ctx, tx, s.Table)
		})
		if sqlitex.IsBusy(err) {
			what := "disabling"
			if s.Enabled {
				what = "enabling"
			}
			// SQLite has one writer at a time and does not tell which
			// connection holds the lock.
			return nil, fmt.Errorf("%w: %s change tracking on %s waited %s (busy_timeout) for the database's write lock, which another connection holds in an open write transaction; nothing was changed. Run it again when that transaction has ended (SQLite does not say which connection holds it): %w",
				ErrBusy, what, s.Table, sqlitex.BusyTimeout, err)
		}
		return nil, err
	case *dsl.CreateStream:
		return nil, b.createStream(ctx, s)
	case *dsl.DropStream:
		return nil, b.dropStream(ctx, s)
	case *dsl.ShowStreams:
		return b.showStreams(ctx)
	case *dsl.DescribeStream:
		return b.describeStream(ctx, s.Stream)
	case *dsl.DML:
		return b.execDML(ctx, s)
	}
	return nil, fmt.Errorf("%w: statement %T", ErrUnsupported, st)
}

func (b *Backend) createTable(ctx context.Context, s *dsl.CreateTable) error {
	if len(s.Schema.Columns) == 0 {
		return fmt.Errorf("create table %s: no columns", s.Table)
	}
	if _, ok := s.Schema.KeyIndexes(); !ok {
		return fmt.Errorf("create table %s: primary key %v names a column the table does not have", s.Table, s.Schema.Key)
	}
	for _, c := range s.Schema.Columns {
		if cdc.IsMetadataColumn(c.Name) {
			return fmt.Errorf("create table %s: column name %s is reserved for table streams", s.Table, c.Name)
		}
	}
	if _, err := b.db.ExecContext(ctx, sqlitex.CreateTableSQL(s.Table, s.Schema, s.IfNotExists)); err != nil {
		return fmt.Errorf("create table %s: %w", s.Table, err)
	}
	return nil
}

func (b *Backend) dropTable(ctx context.Context, s *dsl.DropTable) error {
	return sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		if err := reconcileAll(ctx, tx); err != nil {
			return err
		}
		name, ok, err := sqlitex.TableName(ctx, tx, s.Table)
		if err != nil {
			return err
		}
		c, tracked, err := lookupTracking(ctx, tx, s.Table)
		if err != nil {
			return err
		}
		if tracked {
			// Also when the application dropped the table already: its
			// registration and change log go.
			if err := untrack(ctx, tx, c, "drop table"); err != nil {
				return err
			}
		}
		if !ok {
			if s.IfExists || tracked {
				return nil
			}
			return fmt.Errorf("drop table: %w: %s", ErrNoTable, s.Table)
		}
		if _, err := tx.ExecContext(ctx, `DROP TABLE `+sqlitex.Quote(name)); err != nil {
			return fmt.Errorf("drop table %s: %w", name, err)
		}
		return nil
	})
}

func (b *Backend) createStream(ctx context.Context, s *dsl.CreateStream) error {
	mode := s.Mode
	if mode == "" {
		mode = dsl.ModeStandard
	}
	if mode != dsl.ModeStandard && mode != dsl.ModeAppendOnly {
		return fmt.Errorf("create table stream %s: %w: TABLE_STREAM_MODE %q (want STANDARD or APPEND_ONLY)", s.Stream, ErrUnsupported, mode)
	}
	return sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		if err := reconcileAll(ctx, tx); err != nil {
			return err
		}
		name, ok, err := sqlitex.TableName(ctx, tx, s.Table)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("create table stream %s: %w: %s", s.Stream, ErrNoTable, s.Table)
		}
		c, tracked, err := lookupTracking(ctx, tx, name)
		if err != nil {
			return err
		}
		if !tracked {
			return fmt.Errorf("create table stream %s: %w %s; enable it first with: ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true')",
				s.Stream, ErrNotTracked, name, name)
		}
		// The stream's offset must be a point where capture covers the
		// table as it is (doc.go, "Schema changes"); the first stream on
		// the table switches capture on. The write transaction holds the
		// database's write lock, so no application write is under way:
		// every change committed after this one is logged.
		if c, err = captureOn(ctx, tx, c); err != nil {
			return fmt.Errorf("create table stream %s: %w", s.Stream, err)
		}
		schema, _, err := sqlitex.TableSchema(ctx, tx, name)
		if err != nil {
			return err
		}
		if mode == dsl.ModeStandard && len(schema.Key) == 0 {
			return fmt.Errorf("create table stream %s: %w: %s; a STANDARD stream needs one to compute net changes per key (add a PRIMARY KEY, or use 'TABLE_STREAM_MODE' = 'APPEND_ONLY')",
				s.Stream, ErrNoPrimaryKey, name)
		}
		if old, err := lookupStream(ctx, tx, s.Stream); err == nil {
			switch {
			case s.IfNotExists:
				return nil
			case !s.OrReplace:
				return fmt.Errorf("create table stream: %w: %s (use CREATE OR REPLACE or IF NOT EXISTS)", ErrStreamExists, s.Stream)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM sluice_streams WHERE name = ?`, s.Stream); err != nil {
				return fmt.Errorf("replace table stream %s: %w", s.Stream, err)
			}
			if old.table != name {
				if err := lastStreamGone(ctx, tx, old.table); err != nil {
					return err
				}
			}
		}
		seq, err := lastSeq(ctx, tx, c.log)
		if err != nil {
			return err
		}
		pos := position{seq: seq, initial: s.ShowInitialRows}
		_, now := nowUTC()
		staleAfter := s.StaleAfter
		if staleAfter <= 0 {
			staleAfter = runner.DefaultStaleAfter
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO sluice_streams (`+streamCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
			s.Stream, name, mode, s.ShowInitialRows, s.Comment, now, newID(), pos.String(), int64(staleAfter/time.Second))
		if err != nil {
			return fmt.Errorf("create table stream %s: %w", s.Stream, err)
		}
		_, err = b.purgeAll(ctx, tx, false)
		return err
	})
}

func (b *Backend) dropStream(ctx context.Context, s *dsl.DropStream) error {
	return sqlitex.WithImmediate(ctx, b.db, func(tx *sqlitex.Tx) error {
		r, err := lookupStream(ctx, tx, s.Stream)
		if err != nil {
			if s.IfExists && errors.Is(err, runner.ErrNoStream) {
				return nil
			}
			return fmt.Errorf("drop table stream: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sluice_streams WHERE name = ?`, r.name); err != nil {
			return fmt.Errorf("drop table stream %s: %w", r.name, err)
		}
		if err := lastStreamGone(ctx, tx, r.table); err != nil {
			return err
		}
		_, err = b.purgeAll(ctx, tx, false)
		return err
	})
}

// lastStreamGone switches the capture of table off when no stream is
// left on it (captureOff); the purge that follows empties its log.
func lastStreamGone(ctx context.Context, tx sqlitex.Querier, table string) error {
	streams, err := listStreams(ctx, tx, table)
	if err != nil || len(streams) > 0 {
		return err
	}
	c, tracked, err := lookupTracking(ctx, tx, table)
	if err != nil || !tracked {
		return err
	}
	return captureOff(ctx, tx, c)
}
