package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	"modernc.org/sqlite"
)

// Dead letters (runner.DeadLetterTx): the savepoint, flush and storage a
// run with a dead-letter table needs, and the classification of the
// errors it may dead-letter.

// Extended result codes of SQLite constraints (https://sqlite.org/rescode.html).
const (
	sqliteConstraintForeignKey = 787
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// dlSavepoint is the savepoint of runner.DeadLetterTx.
const dlSavepoint = "sluice_dead_letter"

// Rejection classifies err (runner.RowRejecter): a unique or primary-key
// violation is runner.RejectedUnique; another constraint (NOT NULL,
// CHECK), a value too big, a datatype mismatch and a value that does not
// convert to its column's type (*cdc.ValueError) are
// runner.RejectedValue; a foreign key violation, a missing table, a full
// disk, a read-only or busy file, a lost connection are not rejections.
func (s *Sink) Rejection(err error) runner.Rejection {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqliteConstraintUnique, sqliteConstraintPrimaryKey:
			return runner.RejectedUnique
		case sqliteConstraintForeignKey:
			return runner.NotRejected
		}
		switch se.Code() & 0xff {
		case 18, 19, 20, 25: // TOOBIG, CONSTRAINT, MISMATCH, RANGE (sqlitex.IsValueError)
			return runner.RejectedValue
		}
		return runner.NotRejected
	}
	var ve *cdc.ValueError
	if errors.As(err, &ve) && !errors.Is(err, ErrPartialRow) {
		return runner.RejectedValue
	}
	return runner.NotRejected
}

// txState is what a savepoint restores besides the database.
type txState struct {
	written map[cdc.Op]int64
	err     error
	applied bool
}

// Savepoint marks the transaction's state (runner.DeadLetterTx).
func (t *Tx) Savepoint(ctx context.Context) error {
	if _, err := t.q.ExecContext(ctx, "SAVEPOINT "+dlSavepoint); err != nil {
		return fmt.Errorf("sqlite sink: savepoint: %w", err)
	}
	t.saved = &txState{written: maps.Clone(t.written), err: t.err, applied: t.applied}
	return nil
}

// RollbackTo undoes what was done since Savepoint (rows, staged rows,
// counts, a failed Write's poison) and forgets the savepoint.
func (t *Tx) RollbackTo(ctx context.Context) error {
	if t.saved == nil {
		return errors.New("sqlite sink: rollback to a savepoint that was not set")
	}
	for _, q := range []string{"ROLLBACK TO " + dlSavepoint, "RELEASE " + dlSavepoint} {
		if _, err := t.q.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite sink: %s: %w", q, err)
		}
	}
	t.written, t.err, t.applied = t.saved.written, t.saved.err, t.saved.applied
	t.nulls.Reset()
	t.saved = nil
	return nil
}

// Release keeps what was done since Savepoint and forgets the savepoint.
func (t *Tx) Release(ctx context.Context) error {
	if _, err := t.q.ExecContext(ctx, "RELEASE "+dlSavepoint); err != nil {
		return fmt.Errorf("sqlite sink: release savepoint: %w", err)
	}
	t.saved = nil
	return nil
}

// Flush applies the merge rows staged so far to the target and empties
// the staging table, leaving the transaction open for more Writes; it does
// nothing for direct inserts.
func (t *Tx) Flush(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.c.apply == nil || t.applied {
		return nil
	}
	w, err := t.c.apply.Exec(ctx, t.q)
	if err != nil {
		return t.notNullError(err)
	}
	t.nulls.Reset()
	for op, n := range w {
		t.written[op] += n
	}
	if _, err := t.q.ExecContext(ctx, "DELETE FROM temp."+StageTable); err != nil {
		return fmt.Errorf("sqlite sink: empty the staging table: %w", err)
	}
	return nil
}

// createDeadLetterSQL is the dead-letter table (runner.DeadLetterColumns).
func createDeadLetterSQL(table string) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("id" INTEGER PRIMARY KEY, "job" TEXT NOT NULL, "key" TEXT, "change_type" TEXT NOT NULL, "commit_version" INTEGER, "row" TEXT NOT NULL, "error" TEXT NOT NULL, "dead_lettered_at" TIMESTAMP NOT NULL)`, sqlitex.Quote(table))
}

// StoreDeadLetters creates table when it is missing and inserts rows, in
// the transaction (runner.DeadLetterTx).
func (t *Tx) StoreDeadLetters(ctx context.Context, table string, rows []runner.DeadLetter) error {
	if _, err := t.q.ExecContext(ctx, createDeadLetterSQL(table)); err != nil {
		return fmt.Errorf("sqlite sink: create dead-letter table %q: %w", table, err)
	}
	ins := fmt.Sprintf(`INSERT INTO %s ("job", "key", "change_type", "commit_version", "row", "error", "dead_lettered_at") VALUES (?, ?, ?, ?, ?, ?, ?)`, sqlitex.Quote(table))
	for _, d := range rows {
		if _, err := t.q.ExecContext(ctx, ins, d.Job, d.Key, d.Op.String(), d.CommitVersion, d.Row, d.Error, cdc.FormatTimestamp(d.At.UTC())); err != nil {
			return fmt.Errorf("sqlite sink: insert into dead-letter table %q: %w", table, err)
		}
	}
	return nil
}

// LoadDeadLetters returns job's rows of table in id order, read in the
// transaction; none when table does not exist.
func (t *Tx) LoadDeadLetters(ctx context.Context, table, job string) ([]runner.DeadLetter, error) {
	return loadDeadLetters(ctx, t.q, table, job)
}

// DeleteDeadLetters deletes the rows ids of table, in the transaction.
func (t *Tx) DeleteDeadLetters(ctx context.Context, table string, ids []int64) error {
	del := fmt.Sprintf(`DELETE FROM %s WHERE "id" = ?`, sqlitex.Quote(table))
	for _, id := range ids {
		if _, err := t.q.ExecContext(ctx, del, id); err != nil {
			return fmt.Errorf("sqlite sink: delete from dead-letter table %q: %w", table, err)
		}
	}
	return nil
}

// DeadLetters returns job's rows of table in id order (runner.DeadLetterSink);
// none when table does not exist.
func (s *Sink) DeadLetters(ctx context.Context, table, job string) ([]runner.DeadLetter, error) {
	return loadDeadLetters(ctx, s.db, table, job)
}

// PurgeDeadLetters deletes job's rows of table and returns how many it
// deleted (0 when table does not exist).
func (s *Sink) PurgeDeadLetters(ctx context.Context, table, job string) (int64, error) {
	if _, ok, err := readTarget(ctx, s.db, table); err != nil || !ok {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE "job" = ?`, sqlitex.Quote(table)), job)
	if err != nil {
		return 0, fmt.Errorf("sqlite sink: purge dead-letter table %q: %w", table, err)
	}
	return res.RowsAffected()
}

func loadDeadLetters(ctx context.Context, q Querier, table, job string) ([]runner.DeadLetter, error) {
	if _, ok, err := readTarget(ctx, q, table); err != nil || !ok {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, fmt.Sprintf(`SELECT "id", "job", "key", "change_type", "commit_version", "row", "error", "dead_lettered_at" FROM %s WHERE "job" = ? ORDER BY "id"`, sqlitex.Quote(table)), job)
	if err != nil {
		return nil, fmt.Errorf("sqlite sink: read dead-letter table %q: %w", table, err)
	}
	defer rows.Close()
	var out []runner.DeadLetter
	for rows.Next() {
		var d runner.DeadLetter
		var key sql.NullString
		var ver sql.NullInt64
		var op, at string
		if err := rows.Scan(&d.ID, &d.Job, &key, &op, &ver, &d.Row, &d.Error, &at); err != nil {
			return nil, fmt.Errorf("sqlite sink: read dead-letter table %q: %w", table, err)
		}
		d.Key, d.CommitVersion = key.String, ver.Int64
		if d.Op, err = cdc.ParseOp(strings.TrimSpace(op)); err != nil {
			return nil, fmt.Errorf("sqlite sink: dead-letter table %q, row %d: %w", table, d.ID, err)
		}
		if tm, err := cdc.ParseTimestamp(at); err == nil {
			d.At = tm.UTC()
		} else {
			d.At = time.Time{}
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

var (
	_ runner.DeadLetterTx   = (*Tx)(nil)
	_ runner.DeadLetterSink = (*Sink)(nil)
)
