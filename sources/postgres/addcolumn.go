package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// A change logged before a column c was added to the table (a typed log
// row written while the table lacked c, or a JSON row whose __attnums
// lack c's attnum) holds no value of c, yet the source row it describes
// holds one now: the value ALTER TABLE … ADD COLUMN gave the rows that
// existed then. The log never carries a NULL the source does not hold,
// so such rows are filled, when the log gains c (a run bringing the log
// in line, alignLog, or enabling tracking again, enableIn) and when JSON
// rows move into the typed columns (migrateExtra):
//
//   - with c's missing value, when PostgreSQL has one
//     (pg_attribute.atthasmissing/attmissingval: ADD COLUMN with a
//     non-volatile DEFAULT, PostgreSQL 11+): the value every row that
//     predates c reads, exactly, for every image (an INSERT, an UPDATE's
//     before and after image, a DELETE). A later ALTER COLUMN c SET
//     DEFAULT leaves it as it was. Typed log rows get it without a
//     rewrite of the log: ADD COLUMN c T DEFAULT <value> makes it the log
//     column's own missing value, then DROP DEFAULT (later rows name c);
//   - otherwise (a volatile DEFAULT — random(), clock_timestamp(),
//     nextval/serial, gen_random_uuid() — which rewrites the table and
//     leaves no missing value; or no DEFAULT; or a rewrite since, such as
//     VACUUM FULL, which clears the missing value) with the value the row
//     of the same primary key holds in the table at that moment (a re-read
//     of the affected keys from the table). That is exact for a key not
//     changed since the ALTER (its row still holds what the ALTER gave it:
//     the volatile value, or NULL without a DEFAULT); a key changed since
//     has a later change that carries c itself, which a STANDARD read
//     delivers, so STANDARD reads are exact. An earlier image of such a
//     key (an APPEND_ONLY stream's INSERT, an UPDATE_BEFORE, a history
//     sink's earlier version) shows the value the key holds at the
//     re-read, not the one it had then, which no log holds; a key deleted
//     since gets NULL. Refusing instead would stop every stream on the
//     table for a value a STANDARD read never delivers.
//
// A table without a primary key cannot be re-read by key: a column no
// row of the table holds a value of (a plain ADD COLUMN without DEFAULT,
// not yet written) is NULL in the rows logged before it, which is what
// the ALTER gave every row; for any other, when rows logged before it
// exist, bringing the log in line refuses (unfillableError), changing
// nothing.

// missingLiterals returns, by column name, the missing value of each
// live column of the table with oid relid that has one
// (pg_attribute.attmissingval), as a SQL literal cast to the column's
// type in t (`'7'::integer`). The value goes through its type's text
// form (array_out of attmissingval, read back as text[]) with
// extra_float_digits 3 set for the transaction, so it reads back exactly;
// a column whose value does not read back as one element (a type whose
// array delimiter is not a comma, box) is left out and re-read from the
// table instead.
func missingLiterals(ctx context.Context, tx pgx.Tx, t *Tracked) (map[string]string, error) {
	out := map[string]string{}
	if t.Relid == 0 {
		return out, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_catalog.set_config('extra_float_digits', '3', true)`); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT a.attname::text, (a.attmissingval::text::pg_catalog.text[])[1] FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.atthasmissing
			AND pg_catalog.array_length(a.attmissingval::text::pg_catalog.text[], 1) = 1`, t.Relid)
	if err != nil {
		return nil, err
	}
	vals := map[string]*string{}
	for rows.Next() {
		var name string
		var v *string
		if err := rows.Scan(&name, &v); err != nil {
			rows.Close()
			return nil, err
		}
		vals[name] = v
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, c := range t.Table.Columns {
		if v := vals[c.Name]; v != nil {
			out[c.Name] = sqlLiteral(*v) + "::" + c.PGType
		}
	}
	return out, nil
}

// tableRef returns the schema-qualified, quoted name of the tracked
// table (by its oid).
func tableRef(ctx context.Context, q sinkpg.Querier, t *Tracked) (string, error) {
	var ref string
	err := q.QueryRow(ctx, `SELECT $1::pg_catalog.oid::pg_catalog.regclass::pg_catalog.text`, t.Relid).Scan(&ref)
	return ref, err
}

// rereadExpr is the value of column col for a change of the key rec
// holds (rec: a row alias with the table's key columns): the table's
// row of that key, read now (NULL for a key that is gone). table is
// tableRef's name.
func rereadExpr(t *Tracked, table, col, rec string) string {
	var on []string
	for _, k := range t.Table.Key {
		on = append(on, "s."+sinkpg.Quote(k)+" OPERATOR(pg_catalog.=) "+rec+"."+sinkpg.Quote(k))
	}
	return fmt.Sprintf(`(SELECT s.%s FROM %s s WHERE %s)`, sinkpg.Quote(col), table, strings.Join(on, " AND "))
}

// addLogColumns adds to the change log of t (in tx, which holds
// sluice's tracking lock) a column for each of the table's columns the
// log lacks (have: the log's column names), and fills it in the typed
// rows logged so far, which all predate the column: with its missing
// value (a DEFAULT given to the log column and dropped again: no rewrite
// of the log), else re-read from the table by primary key. It reports
// whether it added any. A column to re-read on a table without a
// primary key, with rows logged before it, is refused (unfillableError).
//
// With deferred (a run bringing the log in line, whose first transaction
// holds the log's lock that every writer's capture waits for), the
// re-read is not done here but recorded as pending on the log column
// (markReread), and done by rereadPending in the run's second
// transaction, which takes no lock a writer waits for; until then every
// read refuses (checkLog), so none delivers the rows unfilled, also
// after a crash between the two.
func addLogColumns(ctx context.Context, tx pgx.Tx, t *Tracked, have map[string]bool, deferred bool) (bool, error) {
	var missing []string
	for _, c := range t.Table.Columns {
		if !have[c.Name] {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	fill, err := newAddedFill(ctx, tx, t)
	if err != nil {
		return false, err
	}
	var adds, drops, reread []string
	for _, c := range t.Table.Columns {
		if have[c.Name] {
			continue
		}
		add := "ADD COLUMN " + sinkpg.Quote(c.Name) + " " + c.PGType
		if lit, ok := fill.lits[c.Name]; ok {
			add += " DEFAULT " + lit
			drops = append(drops, "ALTER COLUMN "+sinkpg.Quote(c.Name)+" DROP DEFAULT")
		} else {
			reread = append(reread, c.Name)
		}
		adds = append(adds, add)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s %s`, t.LogRef(), strings.Join(adds, ", "))); err != nil {
		return false, err
	}
	if len(drops) > 0 {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s %s`, t.LogRef(), strings.Join(drops, ", "))); err != nil {
			return false, err
		}
	}
	if len(reread) == 0 || t.Relid == 0 {
		return true, nil
	}
	if fill.table == "" {
		// No key to re-read by: the typed rows keep NULL where the
		// table holds no value of the column at all, else refuse.
		var n int64
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s l WHERE l.__extra IS NULL`, t.LogRef())).Scan(&n); err != nil || n == 0 {
			return err == nil, err
		}
		var unfilled []string
		for _, c := range reread {
			if _, ok, err := fill.expr(ctx, tx, c, "l"); err != nil {
				return false, err
			} else if !ok {
				unfilled = append(unfilled, c)
			}
		}
		if len(unfilled) > 0 {
			return false, unfillableError(t, unfilled, n)
		}
		return true, nil
	}
	if deferred {
		return true, markReread(ctx, tx, t, reread)
	}
	return true, rereadTyped(ctx, tx, t, fill.table, reread, -1)
}

// rereadTyped sets the columns cols of the typed rows of t's change log
// (with __seq up to upTo; -1: all) to the values the table's rows of
// their keys hold (table: tableRef), where those are not NULL.
func rereadTyped(ctx context.Context, tx pgx.Tx, t *Tracked, table string, cols []string, upTo int64) error {
	var set, src, on, nonNull []string
	for _, c := range cols {
		set = append(set, sinkpg.Quote(c))
		src = append(src, "s."+sinkpg.Quote(c))
		nonNull = append(nonNull, "s."+sinkpg.Quote(c)+" IS NOT NULL")
	}
	for _, k := range t.Table.Key {
		on = append(on, "s."+sinkpg.Quote(k)+" OPERATOR(pg_catalog.=) l."+sinkpg.Quote(k))
	}
	// ROW(…): a single column is not a row constructor without it.
	_, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s l SET (%s) = ROW(%s) FROM %s s WHERE l.__extra IS NULL AND ($1::int8 < 0 OR l.__seq <= $1::int8) AND %s AND (%s)`,
		t.LogRef(), strings.Join(set, ", "), strings.Join(src, ", "), table, strings.Join(on, " AND "), strings.Join(nonNull, " OR ")), upTo)
	return err
}

// rereadMark starts the comment that marks a log column whose typed rows
// up to a __seq (the number after it) are still to be re-read from the
// table (markReread, rereadPending).
const rereadMark = "sluice: to re-read from the table for __seq <= "

// markReread records, as the comment of each log column of cols, that
// the typed rows logged so far are to be re-read: up to the last __seq
// the log's sequence handed out. tx holds the log's lock (the ALTER that
// added the columns), so every row logged later has a greater __seq. A
// comment changes with its transaction and goes with the column.
func markReread(ctx context.Context, tx pgx.Tx, t *Tracked, cols []string) error {
	var seq string
	if err := tx.QueryRow(ctx, `SELECT pg_catalog.pg_get_serial_sequence($1, '__seq')`, t.LogRef()).Scan(&seq); err != nil {
		return err
	}
	var upTo int64
	if err := tx.QueryRow(ctx, `SELECT last_value FROM `+seq).Scan(&upTo); err != nil {
		return err
	}
	for _, c := range cols {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`COMMENT ON COLUMN %s.%s IS %s`, t.LogRef(), sinkpg.Quote(c), sqlLiteral(fmt.Sprintf("%s%d", rereadMark, upTo)))); err != nil {
			return err
		}
	}
	return nil
}

// pendingRereads returns, by log column, the __seq up to which the typed
// rows of t's change log are still to be re-read (markReread): one
// catalog query.
func pendingRereads(ctx context.Context, q sinkpg.Querier, t *Tracked) (map[string]int64, error) {
	rows, err := q.Query(ctx, `SELECT a.attname::text, pg_catalog.substr(d.description, $2)::int8 FROM pg_catalog.pg_description d
		JOIN pg_catalog.pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid
		WHERE d.objoid = pg_catalog.to_regclass($1) AND d.classoid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid > 0
			AND pg_catalog.starts_with(d.description, $3)`, t.LogRef(), len(rereadMark)+1, rereadMark)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var upTo int64
		if err := rows.Scan(&name, &upTo); err != nil {
			return nil, err
		}
		out[name] = upTo
	}
	return out, rows.Err()
}

// rereadPending does the re-reads markReread recorded on t's change log
// (tx holds sluice's tracking lock) and clears their marks: each column
// the table still has, by primary key (a table without one has no mark:
// addLogColumns settles it at once). A column the table no longer has
// keeps its mark until bringing the log in line drops it.
func rereadPending(ctx context.Context, tx pgx.Tx, t *Tracked) error {
	pending, err := pendingRereads(ctx, tx, t)
	if err != nil || len(pending) == 0 || len(t.Table.Key) == 0 || t.Relid == 0 {
		return err
	}
	table, err := tableRef(ctx, tx, t)
	if err != nil {
		return err
	}
	for _, c := range t.Table.Columns {
		upTo, ok := pending[c.Name]
		if !ok {
			continue
		}
		if err := rereadTyped(ctx, tx, t, table, []string{c.Name}, upTo); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`COMMENT ON COLUMN %s.%s IS NULL`, t.LogRef(), sinkpg.Quote(c.Name))); err != nil {
			return err
		}
	}
	return nil
}

// unfillableError refuses to bring the change log of t in line: cols
// were added to the table with values PostgreSQL computed per row (a
// volatile DEFAULT, or the table was rewritten since) and n changes
// logged before them cannot carry those values: without a primary key
// no row can be re-read for them.
func unfillableError(t *Tracked, cols []string, n int64) error {
	return fmt.Errorf("%w: column(s) %s were added to %s, which has no primary key, with values PostgreSQL gave each existing row (a volatile DEFAULT, or the table was rewritten since); the %d change(s) captured before cannot carry those values and no row can be re-read for them by key, so nothing was read and the offset did not move. Drop and recreate the streams on %s and run sluice backfill on their jobs (the backfill copies every row with its values)",
		ErrTableChanged, sinkpg.QuoteList("", cols), sinkpg.Quote(t.Table.Name), n, t.Table.Name)
}

// addedFill gives the value of a column for a change logged before the
// column was added (see above).
type addedFill struct {
	t      *Tracked
	lits   map[string]string // missingLiterals, and NULL for the all-NULL columns of a table without a key (expr)
	table  string            // tableRef; "" for a table without a primary key
	valued map[string]bool   // table without a key: columns known to hold a value in some row
}

// newAddedFill reads the missing values of t's columns and its table's
// name, in tx.
func newAddedFill(ctx context.Context, tx pgx.Tx, t *Tracked) (*addedFill, error) {
	lits, err := missingLiterals(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	f := &addedFill{t: t, lits: lits, valued: map[string]bool{}}
	if t.Relid != 0 && len(t.Table.Key) > 0 {
		if f.table, err = tableRef(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// expr returns the SQL value of column col for a change, logged before
// col was added, of the key that the row alias rec holds: its missing
// value, else the table's row of that key. On a table without a primary
// key, a column no row of the table holds a value of is NULL (what the
// ALTER gave every row: a volatile DEFAULT gives each a value), and any
// other has none (false).
func (f *addedFill) expr(ctx context.Context, tx pgx.Tx, col, rec string) (string, bool, error) {
	if lit, ok := f.lits[col]; ok {
		return lit, true, nil
	}
	if f.table != "" {
		return rereadExpr(f.t, f.table, col, rec), true, nil
	}
	if f.valued[col] || f.t.Relid == 0 {
		return "", false, nil
	}
	table, err := tableRef(ctx, tx, f.t)
	if err != nil {
		return "", false, err
	}
	var valued bool
	if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s s WHERE s.%s IS NOT NULL)`, table, sinkpg.Quote(col))).Scan(&valued); err != nil {
		return "", false, err
	}
	if valued {
		f.valued[col] = true
		return "", false, nil
	}
	for _, c := range f.t.Table.Columns {
		if c.Name == col {
			f.lits[col] = "NULL::" + c.PGType
		}
	}
	return f.lits[col], true, nil
}
