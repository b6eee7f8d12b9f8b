package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// attnamesOf returns the column names of attrs by attnum (index attnum-1),
// "" where a column was dropped: sluice.tracking.attnames, which lets
// enabling tracking again tell a renamed column (same attnum, new name)
// from a dropped and an added one.
func attnamesOf(attrs []attribute) []string {
	n := 0
	for _, a := range attrs {
		n = max(n, int(a.Num))
	}
	out := make([]string, n)
	for _, a := range attrs {
		out[a.Num-1] = a.Name
	}
	return out
}

// followColumns brings the change log of t, whose tracking is being
// enabled again, in line with the table's columns attrs before
// trackingDDL adds the missing ones: a column renamed since tracking was
// last enabled (the same attnum under another name in oldNames) renames
// its log column, so the changes logged under the old name are read under
// the new one; a column whose type changed has its log column converted
// (USING col::newtype), so the logged values are read in the table's
// type. A logged value the new type cannot hold (a narrowing change) is an
// error that names the column; nothing is changed. tx holds the tracking
// lock.
func followColumns(ctx context.Context, tx pgx.Tx, t *Tracked, attrs []attribute, oldNames []string) error {
	logTab, ok, err := sinkpg.DescribeQualified(ctx, tx, "sluice", t.Log)
	if err != nil || !ok {
		return err
	}
	have := map[string]string{}
	for _, c := range logTab.Columns {
		have[c.Name] = c.PGType
	}
	type rename struct{ from, to string }
	var renames []rename
	for _, a := range attrs {
		if int(a.Num) > len(oldNames) {
			continue
		}
		o := oldNames[a.Num-1]
		if _, logged := have[o]; o == "" || o == a.Name || !logged {
			continue
		}
		if _, taken := have[a.Name]; taken {
			continue
		}
		renames = append(renames, rename{o, a.Name})
	}
	// Through temporary names, so that swapped names do not collide.
	for i, r := range renames {
		tmp := fmt.Sprintf("__sluice_rename_%d", i)
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s RENAME COLUMN %s TO %s`, t.LogRef(), sinkpg.Quote(r.from), sinkpg.Quote(tmp))); err != nil {
			return err
		}
		have[tmp] = have[r.from]
		delete(have, r.from)
	}
	for i, r := range renames {
		tmp := fmt.Sprintf("__sluice_rename_%d", i)
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s RENAME COLUMN %s TO %s`, t.LogRef(), sinkpg.Quote(tmp), sinkpg.Quote(r.to))); err != nil {
			return err
		}
		have[r.to] = have[tmp]
		delete(have, tmp)
	}
	for _, c := range t.Table.Columns {
		typ, ok := have[c.Name]
		if !ok || typ == c.PGType {
			continue
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN %[2]s TYPE %[3]s USING %[2]s::%[3]s`, t.LogRef(), sinkpg.Quote(c.Name), c.PGType))
		if err != nil {
			return fmt.Errorf("%w: column %s of %s changed type from %s to %s, and values of it in the change log do not convert (%v); nothing was changed. Run the jobs of every stream on %s first (or drop and recreate those streams and backfill their targets), then enable change tracking again",
				ErrTableChanged, sinkpg.Quote(c.Name), sinkpg.Quote(t.Table.Name), typ, c.PGType, err, t.Table.Name)
		}
	}
	return nil
}

// migrateExtra moves the rows the capture function logged as JSON
// (__extra, while the table's columns differed from the log's) into the
// log's typed columns, which trackingDDL has just made the table's:
// json_populate_record matches the JSON's keys, the table's column names
// when the row was captured, to the log's columns and converts each value
// with its type's input function. A key without a log column (a column
// dropped since) is left out; a log column without a key (added after the
// row was captured) is NULL. Exactness is that of the to_json →
// json_populate_record round trip (TestJSONPathExact; the capture pins
// extra_float_digits and IntervalStyle): every type comes back equal
// except a json value's surrounding whitespace, the escapes of a json
// value that is a bare string, and an array's lower bound other than 1. A column renamed twice between two enables is read under
// neither name for the rows captured in between.
func migrateExtra(ctx context.Context, tx pgx.Tx, t *Tracked) error {
	cols := make([]string, len(t.Table.Columns))
	vals := make([]string, len(t.Table.Columns))
	for i, c := range t.Table.Columns {
		cols[i] = sinkpg.Quote(c.Name)
		vals[i] = "r." + cols[i]
	}
	if len(cols) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %[1]s l SET (%[2]s) = (SELECT %[3]s FROM pg_catalog.json_populate_record(NULL::%[1]s, l.__extra) r), __extra = NULL WHERE l.__extra IS NOT NULL`,
		t.LogRef(), strings.Join(cols, ", "), strings.Join(vals, ", ")))
	if err != nil {
		return fmt.Errorf("move the changes captured after a change of the columns of %s into its change log's columns: %w", sinkpg.Quote(t.Table.Name), err)
	}
	return nil
}

// extraRowsError is the refusal of a read whose window holds n rows
// captured as JSON (the table's columns changed since tracking was
// enabled), with the one statement that moves past it losing nothing.
func extraRowsError(t *Tracked, n int64) error {
	return fmt.Errorf("%w: %d change(s) of %s were captured after a column of it was added, dropped, renamed or changed type, and are held as JSON until its change log is brought in line with its columns (%w: the run plans again, and describing the stream does it); nothing was read and the offset did not move. ALTER TABLE %s SET PROPERTIES ('change_tracking' = 'true') does the same",
		ErrTableChanged, n, sinkpg.Quote(t.Table.Name), runner.ErrPlanStale, t.Table.Name)
}

// logBehind reports whether the change log of t (described by checkLog)
// lags the table's columns although every column has a log column: a
// column dropped, renamed or added since tracking was last enabled or
// brought in line (sluice.tracking.attnames against the table's live
// columns), or rows the capture logged as JSON (__extra). One row of
// sluice.tracking, the table's pg_attribute rows and one probe of the
// log's partial index on __extra.
func logBehind(ctx context.Context, q sinkpg.Querier, t *Tracked) (bool, error) {
	if t.Relid != 0 {
		var names []string
		err := q.QueryRow(ctx, `SELECT coalesce(attnames, '{}') FROM sluice.tracking WHERE table_name = $1`, t.Key).Scan(&names)
		if err != nil {
			return false, err
		}
		attrs, err := tableAttributes(ctx, q, t.Relid)
		if err != nil {
			return false, err
		}
		if !slices.Equal(names, attnamesOf(attrs)) {
			return true, nil
		}
	}
	if !t.HasExtra {
		return false, nil
	}
	var extra bool
	err := q.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s l WHERE l.__extra IS NOT NULL)`, t.LogRef())).Scan(&extra)
	return extra, err
}

// followColumnsNow brings the change log of the table of stream s (t)
// in line with the table's columns, as enabling tracking again does
// (EnableTracking: its log columns renamed, converted and added, the
// capture function rewritten for the columns, the rows logged as JSON
// moved into typed columns), so that a run reads every change with every
// column without anyone enabling tracking again. It takes the same locks,
// with the same bounded waits (locks.go: each attempt waits at most
// lockAttempt, letting the application's statements through in between).
// A failure (a narrowing type change whose logged values do not convert,
// a role that may not alter the table) is returned, saying so.
func (b *Backend) followColumnsNow(ctx context.Context, s *runner.StreamInfo, t *Tracked) error {
	b.log.Info("the columns of a tracked table changed: bringing its change log in line, as enabling tracking again does", "stream", s.Name, "table", t.Table.Name)
	if err := b.EnableTracking(ctx, t.Table.Name); err != nil {
		return fmt.Errorf("table stream %s: the columns of %s changed, and bringing its change log in line with them failed: %w", s.Name, sinkpg.Quote(t.Table.Name), err)
	}
	return nil
}

// countExtraRows counts the rows of the window after from (nil: all) up
// to now that were captured as JSON, along the log's partial index on
// them.
func countExtraRows(ctx context.Context, tx pgx.Tx, t *Tracked, from *Position, now Position) (int64, error) {
	if !t.HasExtra {
		return 0, nil
	}
	var n int64
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s l WHERE l.__extra IS NOT NULL AND %s`, t.LogRef(), WindowPredicate("l.__txid", from, now))).Scan(&n)
	return n, err
}
