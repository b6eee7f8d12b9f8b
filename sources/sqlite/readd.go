package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// readdedColumns returns the columns of the tracked table c (as it is
// now, table) that were dropped and added again under the same name since
// capture was installed. SQLite has no column identity (PostgreSQL's
// attnum): the triggers' reference to a dropped column resolves (to NULL)
// while it is gone and to the new column once one of that name is added,
// so owned (capturedNames) maps the new column to the dropped one's log
// columns, whose values the source no longer holds. Two traces tell it:
//
//   - the column's position: ALTER TABLE ADD COLUMN appends, and no
//     other statement moves a column (a rebuild drops the triggers), so
//     the columns kept since install are in the order they had then
//     (c.columns) and come first; a column out of that order, or after a
//     column new since, was added again;
//   - its declaration (type, NOT NULL, DEFAULT) differs from the one in
//     the definition recorded at install (c.tableSQL, read back by
//     SQLite itself into a TEMP table): no statement but a DROP and an
//     ADD changes it (a rebuild drops the triggers).
//
// A column that was the last one, added again with the same declaration
// and no run in between, leaves neither trace (SQLite's own definition
// text is the same as before): it is taken for the same column (README).
// reinstall leaves the columns returned out of owned, so alignLog moves
// their log columns aside and starts new ones, as for any column added
// since: the old images are the column's DEFAULT (what SQLite reads for
// rows older than the column, exactly: ADD COLUMN takes only a constant
// DEFAULT) and the new images are taken from the table.
func readdedColumns(ctx context.Context, q sqlitex.Querier, c captured, table string, owned map[string]string) ([]string, error) {
	if owned == nil {
		return nil, nil
	}
	cols, err := declaredColumns(ctx, q, table, "main")
	if err != nil {
		return nil, err
	}
	was, err := recordedColumns(ctx, q, c.tableSQL)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, n := range c.columns {
		at[n] = i
	}
	var out []string
	prev, tail := -1, false
	for _, col := range cols {
		s, ok := owned[col.name]
		if !ok || s == "" {
			tail = true // new since install: every later column was added after it
			continue
		}
		i, known := at[s]
		switch {
		case !known:
			tail = true
		case tail || i < prev:
			out = append(out, col.name)
			tail = true
		default:
			prev = i
			if d, ok := was[s]; ok && d != col.decl {
				out = append(out, col.name)
			}
		}
	}
	return out, nil
}

// declared is one column and its declaration (type, NOT NULL, DEFAULT)
// as PRAGMA table_info reports it.
type declared struct{ name, decl string }

// declaredColumns reads the columns of table in schema, in order.
func declaredColumns(ctx context.Context, q sqlitex.Querier, table, schema string) ([]declared, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type || '|' || "notnull" || '|' || coalesce(dflt_value, '<none>') FROM pragma_table_info(?, ?) ORDER BY cid`, table, schema)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []declared
	for rows.Next() {
		var d declared
		if err := rows.Scan(&d.name, &d.decl); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// probeTable is the TEMP table recordedColumns has SQLite read a
// recorded definition into.
const probeTable = "sluice_recorded_definition"

// recordedColumns returns the declaration of each column (by name) of
// the CREATE TABLE statement that starts def (a definition recorded by
// install: the table's CREATE TABLE, then its CREATE INDEX statements,
// one a line), read by SQLite itself: the statement is run as CREATE TEMP
// TABLE under another name and its columns read back, then dropped.
// A definition it cannot read that way (CREATE TABLE … AS, an index
// statement it cannot find the start of) yields none: no declaration is
// then compared.
func recordedColumns(ctx context.Context, q sqlitex.Querier, def string) (map[string]string, error) {
	rest, ok := strings.CutPrefix(def, "CREATE TABLE ")
	if !ok {
		return nil, nil
	}
	// Skip the table's name: quoted ("…", `…`, […]) or bare.
	i := 0
	switch {
	case rest == "":
		return nil, nil
	case rest[0] == '"' || rest[0] == '`' || rest[0] == '[':
		closer := rest[0]
		if closer == '[' {
			closer = ']'
		}
		for i = 1; i < len(rest); i++ {
			if rest[i] == closer {
				if closer != ']' && i+1 < len(rest) && rest[i+1] == closer {
					i++
					continue
				}
				break
			}
		}
		i++
	default:
		for i < len(rest) && rest[i] != '(' && rest[i] != ' ' && rest[i] != '\n' && rest[i] != '\t' {
			i++
		}
	}
	if i > len(rest) {
		return nil, nil
	}
	body := strings.TrimLeft(rest[i:], " \t\r\n")
	if !strings.HasPrefix(body, "(") {
		return nil, nil
	}
	for _, ix := range []string{"\nCREATE INDEX ", "\nCREATE UNIQUE INDEX "} {
		if j := strings.Index(body, ix); j >= 0 {
			body = body[:j]
		}
	}
	probe := sqlitex.Quote(probeTable)
	if _, err := q.ExecContext(ctx, `DROP TABLE IF EXISTS temp.`+probe); err != nil {
		return nil, err
	}
	if _, err := q.ExecContext(ctx, `CREATE TEMP TABLE `+probe+` `+body); err != nil {
		return nil, nil // not readable this way: compare no declaration
	}
	cols, err := declaredColumns(ctx, q, probeTable, "temp")
	if _, derr := q.ExecContext(ctx, `DROP TABLE temp.`+probe); err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range cols {
		out[d.name] = d.decl
	}
	return out, nil
}
