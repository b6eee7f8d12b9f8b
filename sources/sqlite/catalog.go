package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
)

// catalogSQL creates sluice's own tables (see doc.go).
const catalogSQL = `
CREATE TABLE IF NOT EXISTS sluice_tracking (
	tbl     TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
	log     TEXT NOT NULL,
	columns TEXT NOT NULL,
	enabled TEXT NOT NULL,
	table_sql TEXT
);
CREATE TABLE IF NOT EXISTS sluice_streams (
	name              TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
	tbl               TEXT NOT NULL COLLATE NOCASE,
	mode              TEXT NOT NULL,
	show_initial_rows INTEGER NOT NULL,
	comment           TEXT NOT NULL DEFAULT '',
	created           TEXT NOT NULL,
	id                TEXT NOT NULL,
	"offset"          TEXT NOT NULL,
	stale_after       INTEGER NOT NULL DEFAULT 1209600,
	stale_since       TEXT
);`

// initialPrefix marks the offset of a SHOW_INITIAL_ROWS stream that has not
// been consumed yet: "initial@<seq>".
const initialPrefix = "initial@"

// position is a parsed offset position of this backend.
type position struct {
	seq     int64
	initial bool // the initial rows are still pending (SHOW_INITIAL_ROWS)
	// anchor is the fingerprint of the change-log row numbered seq when
	// the read point was taken (anchor.go), "" when there was none or the
	// offset was written by a sluice without anchors: "<seq>:<anchor>".
	anchor string
}

func (p position) String() string {
	s := strconv.FormatInt(p.seq, 10)
	if p.initial {
		return initialPrefix + s
	}
	if p.anchor != "" {
		return s + ":" + p.anchor
	}
	return s
}

func (p position) offset() cdc.Offset { return cdc.SingleOffset(p.String()) }

// parseOffset reads an offset of this backend. The zero offset is seq 0.
func parseOffset(o cdc.Offset) (position, error) {
	if o.IsZero() {
		return position{}, nil
	}
	s, ok := o.Get("")
	if !ok || len(o.Positions) != 1 {
		return position{}, fmt.Errorf("%w: %s is not a sqlite stream offset", cdc.ErrBadOffset, o)
	}
	return parsePosition(s)
}

// parseRange parses the two offsets of a read or an advance.
func parseRange(from, to cdc.Offset) (f, t position, err error) {
	if f, err = parseOffset(from); err != nil {
		return f, t, err
	}
	t, err = parseOffset(to)
	return f, t, err
}

func parsePosition(s string) (position, error) {
	var p position
	if rest, ok := strings.CutPrefix(s, initialPrefix); ok {
		p.initial, s = true, rest
	} else if num, anchor, ok := strings.Cut(s, ":"); ok && validAnchor(anchor) {
		p.anchor, s = anchor, num
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return position{}, fmt.Errorf("%w: %q is not a sqlite stream offset", cdc.ErrBadOffset, s)
	}
	p.seq = n
	return p, nil
}

// catalogUpgrade brings a catalog made by an earlier sluice up to date:
// sluice_tracking gains table_sql (NULL makes the next use of each tracked
// table re-install its capture, see syncCapture), sluice_streams the
// retention columns (existing streams get the default retention).
func catalogUpgrade(ctx context.Context, q sqlitex.Querier) error {
	for _, c := range []struct{ table, column, def string }{
		{"sluice_tracking", "table_sql", "TEXT"},
		// retention (seconds; 14 days) and the time a stream went stale
		{"sluice_streams", "stale_after", "INTEGER NOT NULL DEFAULT 1209600"},
		{"sluice_streams", "stale_since", "TEXT"},
	} {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('`+c.table+`') WHERE name = ?`, c.column).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := q.ExecContext(ctx, `ALTER TABLE `+c.table+` ADD COLUMN `+c.column+` `+c.def); err != nil {
				return err
			}
		}
	}
	return nil
}

// logTable is the change-log table of a tracked table: sluice_changes_<t>.
// A rename of the table renames its log (syncCapture).
func logTable(table string) string { return "sluice_changes_" + table }

// captured is a tracked table's registration in sluice_tracking.
type captured struct {
	table    string   // as stored in sqlite_schema when last synced
	log      string   // change-log table
	columns  []string // the columns the triggers capture
	tableSQL string   // the table's CREATE statement when capture was installed
}

func lookupTracking(ctx context.Context, q sqlitex.Querier, table string) (captured, bool, error) {
	var c captured
	var cols string
	var tsql sql.NullString
	err := q.QueryRowContext(ctx, `SELECT tbl, log, columns, table_sql FROM sluice_tracking WHERE tbl = ?`, table).Scan(&c.table, &c.log, &cols, &tsql)
	c.tableSQL = tsql.String
	if err == sql.ErrNoRows {
		return captured{}, false, nil
	}
	if err != nil {
		return captured{}, false, fmt.Errorf("read change tracking of %s: %w", table, err)
	}
	if err := json.Unmarshal([]byte(cols), &c.columns); err != nil {
		return captured{}, false, fmt.Errorf("read change tracking of %s: %w", table, err)
	}
	return c, true, nil
}

// streamRow is one row of sluice_streams.
type streamRow struct {
	name, table, mode, comment, id string
	showInitial                    bool
	created                        time.Time
	pos                            position
	staleAfter                     time.Duration // retention (STALE_AFTER)
	staleSince                     time.Time     // when it was found stale; zero while it is not
}

const streamCols = `name, tbl, mode, show_initial_rows, comment, created, id, "offset", stale_after, stale_since`

func scanStream(sc interface{ Scan(...any) error }) (streamRow, error) {
	var r streamRow
	var created, off string
	var staleAfter int64
	var staleSince sql.NullString
	if err := sc.Scan(&r.name, &r.table, &r.mode, &r.showInitial, &r.comment, &created, &r.id, &off, &staleAfter, &staleSince); err != nil {
		return r, err
	}
	t, err := cdc.ParseTimestamp(created)
	if err != nil {
		return r, fmt.Errorf("stream %s: created: %w", r.name, err)
	}
	r.created = t.UTC()
	r.staleAfter = time.Duration(staleAfter) * time.Second
	if staleSince.Valid {
		t, err := cdc.ParseTimestamp(staleSince.String)
		if err != nil {
			return r, fmt.Errorf("stream %s: stale_since: %w", r.name, err)
		}
		r.staleSince = t.UTC()
	}
	if r.pos, err = parsePosition(off); err != nil {
		return r, fmt.Errorf("stream %s: %w", r.name, err)
	}
	return r, nil
}

// lookupStream returns the stream named name; an error wrapping
// runner.ErrNoStream when there is none.
func lookupStream(ctx context.Context, q sqlitex.Querier, name string) (streamRow, error) {
	r, err := scanStream(q.QueryRowContext(ctx, `SELECT `+streamCols+` FROM sluice_streams WHERE name = ?`, name))
	if err == sql.ErrNoRows {
		return r, fmt.Errorf("%w: %s", runner.ErrNoStream, name)
	}
	if err != nil {
		return r, fmt.Errorf("read table stream %s: %w", name, err)
	}
	return r, nil
}

// listStreams returns the streams, ordered by name; only those on table
// when table is not "".
func listStreams(ctx context.Context, q sqlitex.Querier, table string) ([]streamRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+streamCols+` FROM sluice_streams WHERE ? = '' OR tbl = ? ORDER BY name`, table, table)
	if err != nil {
		return nil, fmt.Errorf("list table streams: %w", err)
	}
	defer rows.Close()
	var out []streamRow
	for rows.Next() {
		r, err := scanStream(rows)
		if err != nil {
			return nil, fmt.Errorf("list table streams: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list table streams: %w", err)
	}
	return out, nil
}

func streamNames(rs []streamRow) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.name
	}
	return strings.Join(names, ", ")
}

// lastSeq is the highest change-log seq ever assigned for log (0 when none):
// the read point of a read that starts now. It comes from sqlite_sequence,
// so purging the log never moves it back.
func lastSeq(ctx context.Context, q sqlitex.Querier, log string) (int64, error) {
	var n sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, log).Scan(&n)
	if err != nil && err != sql.ErrNoRows {
		return 0, fmt.Errorf("read change log position of %s: %w", log, err)
	}
	return n.Int64, nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// nowUTC is the catalog's clock, in the stored form.
func nowUTC() (time.Time, string) {
	t := time.Now().UTC().Truncate(time.Microsecond)
	return t, t.Format(sqlitex.TimestampLayout)
}
