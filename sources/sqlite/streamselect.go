package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// A SELECT of `sluice sql` may read table streams by name, as on
// ClickZetta (SELECT * FROM orders_stream WHERE __change_type = 'INSERT'):
// a stream then reads as the relation of its pending changes — exactly
// what a read from its offset (and `sluice preview`) returns now:
//
//	__change_type       STRING
//	__commit_version    BIGINT
//	__commit_timestamp  TIMESTAMP
//	<table columns>     the table's declared types
//
// A table or view with the same name as a stream shadows it (the SELECT
// reads the table, as before). A plain read never moves the offset. selectStreams runs such a SELECT on
// one dedicated connection inside one read transaction (a single snapshot
// for every stream it names and for the tables it joins): for each stream
// it fixes the read point as Changes does, fills a TEMP table declared with
// the types above from ChangesQuery(offset, read point) (parameters bound,
// not inlined), and puts a TEMP VIEW with the stream's name over it (temp
// objects shadow main ones on that connection; the views are created after
// every fill, so no view can shadow a table or change log ChangesQuery
// reads).
// Because the view's columns are plain column references, the SELECT's
// result columns get the declared types back (sqlite3_column_decltype
// follows views), so DECIMAL and TIMESTAMP decode to their logical types
// exactly as for a table. The transaction is rolled back at the end, which
// removes the temp objects; they are also dropped explicitly, and the
// connection is discarded if that fails, so no pooled connection keeps a
// shadowing object.

// streamSelect is the prefix of the scratch temp tables.
const streamSelect = "sluice_select_"

// selectStreams runs the SELECT st (translated as q) against the pending
// changes of the table streams it names in FROM / JOIN (also in subqueries).
// ok is false, with nothing run, when it names none.
func (b *Backend) selectStreams(ctx context.Context, st *dsl.DML, q string) (rs *runner.ResultSet, ok bool, err error) {
	refs := st.TableRefs()
	if len(refs) == 0 {
		return nil, false, nil
	}
	streams, err := listStreams(ctx, b.db, "")
	if err != nil {
		return nil, false, fmt.Errorf("SELECT: %w", err)
	}
	var names []string
	for _, s := range streams {
		for _, r := range refs {
			if asciiEqualFold(s.name, r) {
				// A table or view of the same name keeps being what the
				// name reads.
				var n int
				if err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE`, s.name).Scan(&n); err != nil {
					return nil, false, fmt.Errorf("SELECT: %w", err)
				}
				if n == 0 {
					names = append(names, s.name)
				}
				break
			}
		}
	}
	if len(names) == 0 {
		return nil, false, nil
	}
	rs, err = b.queryStreams(ctx, names, q)
	return rs, true, err
}

// queryStreams runs q with a temp view per stream of names (catalog
// spelling) holding its pending changes.
func (b *Backend) queryStreams(ctx context.Context, names []string, q string) (_ *runner.ResultSet, err error) {
	for _, name := range names {
		if err := b.prepare(ctx, name); err != nil {
			return nil, fmt.Errorf("SELECT: table stream %s: %w", name, err)
		}
	}
	// A read connection: the temp objects below take no write lock.
	conn, err := b.db.ReadConn(ctx)
	if err != nil {
		return nil, fmt.Errorf("SELECT: %w", err)
	}
	tag := newID()[:12]
	var created []string // drop statements, in order
	defer func() {
		if len(created) > 0 {
			clean := context.WithoutCancel(ctx)
			for _, d := range created {
				if _, derr := conn.ExecContext(clean, d); derr != nil {
					// Never hand a connection with a shadowing temp object
					// back to the pool.
					_ = conn.Raw(func(any) error { return driver.ErrBadConn })
					break
				}
			}
		}
		_ = conn.Close()
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("SELECT: %w", err)
	}
	defer func() {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) && err == nil {
			err = fmt.Errorf("SELECT: %w", rerr)
		}
	}()
	for i, name := range names {
		scratch := fmt.Sprintf("%s%s_%d", streamSelect, tag, i)
		// Registered before creation: DROP … IF EXISTS is harmless.
		created = append(created,
			`DROP VIEW IF EXISTS temp.`+sqlitex.Quote(name),
			`DROP TABLE IF EXISTS temp.`+sqlitex.Quote(scratch))
		if err := b.fillStream(ctx, tx, name, scratch); err != nil {
			return nil, fmt.Errorf("SELECT: table stream %s: %w", name, err)
		}
	}
	// The views come last: while the streams are read, their names must
	// not shadow the tables and change logs ChangesQuery reads.
	for i, name := range names {
		scratch := fmt.Sprintf("%s%s_%d", streamSelect, tag, i)
		if _, err := tx.ExecContext(ctx, `CREATE TEMP VIEW `+sqlitex.Quote(name)+` AS SELECT * FROM temp.`+sqlitex.Quote(scratch)); err != nil {
			return nil, fmt.Errorf("SELECT: table stream %s: %w", name, err)
		}
	}
	return queryOn(ctx, tx, q)
}

// fillStream creates temp table scratch and fills it with the pending
// changes of stream name, read in tx.
func (b *Backend) fillStream(ctx context.Context, tx *sql.Tx, name, scratch string) error {
	info, err := b.streamInfo(ctx, tx, name)
	if err != nil {
		return err
	}
	to, err := lastSeq(ctx, tx, logTable(info.Table))
	if err != nil {
		return err
	}
	from, err := parseOffset(info.Offset)
	if err != nil {
		return err
	}
	if from.seq > to {
		return fmt.Errorf("%w: offset %s is after the last change %d", cdc.ErrBadOffset, info.Offset, to)
	}
	cq, args, err := changesQuery(info, info.Offset, position{seq: to}.offset(), false)
	if err != nil {
		return err
	}
	declared, err := declaredTypes(ctx, tx, info.Table)
	if err != nil {
		return err
	}
	cols := []string{`"__change_type" TEXT`, `"__commit_version" BIGINT`, `"__commit_timestamp" TIMESTAMP`}
	for _, c := range info.TableSchema.Columns {
		cols = append(cols, sqlitex.Quote(c.Name)+" "+declared[c.Name])
	}
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE `+sqlitex.Quote(scratch)+` (`+strings.Join(cols, ", ")+`)`); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO temp.`+sqlitex.Quote(scratch)+` `+cq, args...)
	return err
}

// declaredTypes returns the declared type of each column of table (PRAGMA
// table_info), so that the temp copy has the same affinity and logical
// types as the table.
func declaredTypes(ctx context.Context, q sqlitex.Querier, table string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, err
		}
		out[n] = t
	}
	return out, rows.Err()
}

// asciiEqualFold compares names as SQLite does: ASCII letters
// case-insensitively, everything else exactly.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
