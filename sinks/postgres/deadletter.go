package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/runner"
)

// Dead letters (runner.DeadLetterTx): the savepoint, flush and storage a
// run with a dead-letter table needs, and the classification of the
// errors it may dead-letter.

// dlSavepoint is the savepoint of runner.DeadLetterTx.
const dlSavepoint = "sluice_dead_letter"

// Rejection classifies err (runner.RowRejecter) by its SQLSTATE
// (PostgreSQL manual, Appendix A): unique_violation (23505) is
// runner.RejectedUnique; the other integrity violations (NOT NULL 23502,
// CHECK 23514, exclusion 23P01) and the data exceptions of class 22 (a
// value out of range, too long for its column, not valid for its type)
// are runner.RejectedValue, as is a value that does not convert to its
// column's type before it is sent (*cdc.ValueError). A foreign key
// violation (23503, 23001), a missing table or column, a refused
// permission, a serialization failure, a lost connection are not
// rejections.
func (s *Sink) Rejection(err error) runner.Rejection {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return runner.RejectedUnique
		case pe.Code == "23503", pe.Code == "23001": // foreign_key_violation, restrict_violation
			return runner.NotRejected
		case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "23"):
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
	ord, staged, deferredRows int64
	partial, deferred         bool
	written                   map[cdc.Op]int64
	err                       error
}

// Savepoint marks the transaction's state (runner.DeadLetterTx).
func (t *Tx) Savepoint(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, "SAVEPOINT "+dlSavepoint); err != nil {
		return fmt.Errorf("postgres sink: savepoint: %w", err)
	}
	t.saved = &txState{ord: t.ord, staged: t.staged, deferredRows: t.deferredRows, partial: t.partial, deferred: t.deferred, written: maps.Clone(t.written), err: t.err}
	return nil
}

// RollbackTo undoes what was done since Savepoint (rows, staged rows,
// counts, a failed Write's poison) and forgets the savepoint.
func (t *Tx) RollbackTo(ctx context.Context) error {
	s := t.saved
	if s == nil {
		return errors.New("postgres sink: rollback to a savepoint that was not set")
	}
	for _, q := range []string{"ROLLBACK TO SAVEPOINT " + dlSavepoint, "RELEASE SAVEPOINT " + dlSavepoint} {
		if _, err := t.tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres sink: %s: %w", q, err)
		}
	}
	t.ord, t.staged, t.deferredRows, t.partial, t.deferred, t.written, t.err = s.ord, s.staged, s.deferredRows, s.partial, s.deferred, s.written, s.err
	t.nulls.Reset()
	t.saved = nil
	return nil
}

// Release keeps what was done since Savepoint and forgets the savepoint.
func (t *Tx) Release(ctx context.Context) error {
	if _, err := t.tx.Exec(ctx, "RELEASE SAVEPOINT "+dlSavepoint); err != nil {
		return fmt.Errorf("postgres sink: release savepoint: %w", err)
	}
	t.saved = nil
	return nil
}

// Flush applies the rows staged so far, and the batches set aside, to the
// target and empties the staging table, leaving the transaction open for
// more Writes; it does nothing for direct COPYs.
func (t *Tx) Flush(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.deferred {
		for _, q := range []string{fmt.Sprintf("INSERT INTO pg_temp.%s SELECT * FROM pg_temp.%s", StageTable, deferredTable), "DROP TABLE pg_temp." + deferredTable} {
			if _, err := t.tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("postgres sink: apply the batches set aside: %w", err)
			}
		}
		t.deferred = false
		t.staged += t.deferredRows
		t.deferredRows = 0
	}
	if t.c.apply == nil || t.staged == 0 {
		return nil
	}
	a := t.c.apply
	if t.partial && t.c.partial != nil {
		a = t.c.partial
	}
	return t.applyStaged(ctx, a, "TRUNCATE pg_temp."+StageTable)
}

// createDeadLetterSQL is the dead-letter table (runner.DeadLetterColumns).
func createDeadLetterSQL(table string) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s ("id" bigserial PRIMARY KEY, "job" text NOT NULL, "key" jsonb, "change_type" text NOT NULL, "commit_version" bigint, "row" jsonb NOT NULL, "error" text NOT NULL, "dead_lettered_at" timestamptz NOT NULL)`, Quote(table))
}

// StoreDeadLetters creates table when it is missing and inserts rows, in
// the transaction (runner.DeadLetterTx).
func (t *Tx) StoreDeadLetters(ctx context.Context, table string, rows []runner.DeadLetter) error {
	if _, err := t.tx.Exec(ctx, createDeadLetterSQL(table)); err != nil {
		return fmt.Errorf("postgres sink: create dead-letter table %s: %w", Quote(table), err)
	}
	ins := fmt.Sprintf(`INSERT INTO %s ("job", "key", "change_type", "commit_version", "row", "error", "dead_lettered_at") VALUES ($1, $2::jsonb, $3, $4, $5::jsonb, $6, $7)`, Quote(table))
	b := &pgx.Batch{}
	for _, d := range rows {
		b.Queue(ins, d.Job, d.Key, d.Op.String(), d.CommitVersion, d.Row, d.Error, d.At.UTC())
	}
	if err := t.tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres sink: insert into dead-letter table %s: %w", Quote(table), err)
	}
	return nil
}

// LoadDeadLetters returns job's rows of table in id order, read in the
// transaction; none when table does not exist.
func (t *Tx) LoadDeadLetters(ctx context.Context, table, job string) ([]runner.DeadLetter, error) {
	return loadDeadLetters(ctx, t.tx, table, job)
}

// DeleteDeadLetters deletes the rows ids of table, in the transaction.
func (t *Tx) DeleteDeadLetters(ctx context.Context, table string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := t.tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE "id" = ANY($1)`, Quote(table)), ids); err != nil {
		return fmt.Errorf("postgres sink: delete from dead-letter table %s: %w", Quote(table), err)
	}
	return nil
}

// DeadLetters returns job's rows of table in id order (runner.DeadLetterSink);
// none when table does not exist.
func (s *Sink) DeadLetters(ctx context.Context, table, job string) ([]runner.DeadLetter, error) {
	return loadDeadLetters(ctx, s.pool, table, job)
}

// PurgeDeadLetters deletes job's rows of table and returns how many it
// deleted (0 when table does not exist).
func (s *Sink) PurgeDeadLetters(ctx context.Context, table, job string) (int64, error) {
	if ok, err := tableExists(ctx, s.pool, table); err != nil || !ok {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE "job" = $1`, Quote(table)), job)
	if err != nil {
		return 0, fmt.Errorf("postgres sink: purge dead-letter table %s: %w", Quote(table), err)
	}
	return tag.RowsAffected(), nil
}

func tableExists(ctx context.Context, q Querier, table string) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, Quote(table)).Scan(&ok); err != nil {
		return false, fmt.Errorf("postgres sink: look up %s: %w", Quote(table), err)
	}
	return ok, nil
}

func loadDeadLetters(ctx context.Context, q Querier, table, job string) ([]runner.DeadLetter, error) {
	if ok, err := tableExists(ctx, q, table); err != nil || !ok {
		return nil, err
	}
	rows, err := q.Query(ctx, fmt.Sprintf(`SELECT "id", "job", coalesce("key"::text, 'null'), "change_type", coalesce("commit_version", 0), "row"::text, "error", "dead_lettered_at" FROM %s WHERE "job" = $1 ORDER BY "id"`, Quote(table)), job)
	if err != nil {
		return nil, fmt.Errorf("postgres sink: read dead-letter table %s: %w", Quote(table), err)
	}
	defer rows.Close()
	var out []runner.DeadLetter
	for rows.Next() {
		var d runner.DeadLetter
		var op string
		if err := rows.Scan(&d.ID, &d.Job, &d.Key, &op, &d.CommitVersion, &d.Row, &d.Error, &d.At); err != nil {
			return nil, fmt.Errorf("postgres sink: read dead-letter table %s: %w", Quote(table), err)
		}
		if d.Op, err = cdc.ParseOp(op); err != nil {
			return nil, fmt.Errorf("postgres sink: dead-letter table %s, row %d: %w", Quote(table), d.ID, err)
		}
		d.At = d.At.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

var (
	_ runner.DeadLetterTx   = (*Tx)(nil)
	_ runner.DeadLetterSink = (*Sink)(nil)
)
