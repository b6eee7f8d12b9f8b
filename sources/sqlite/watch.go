package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// LogWatch tells where the change logs of one SQLite database stand, for
// `sluice serve`'s one watcher per database (serve.PollWatcher): a SQLite
// capture has no notification to listen to, so serve asks this instead of
// running every idle job to find out that nothing changed.
//
// It reads on the read connections the process shares for the file
// (sqlitex.OpenShared), holding none between calls. Each call of
// Positions first reads PRAGMA data_version on the connection it got,
// which changes only when another connection committed to the file
// (https://sqlite.org/pragma.html#pragma_data_version), and the
// connection's total_changes() (its own writes): while both are what they
// were at this connection's previous call the previous answer is returned
// without reading anything else, so an idle database costs one statement
// per call. (Every call leaves the answer current as of its start, so an
// unchanged pair on any connection means nothing was committed since.)
type LogWatch struct {
	db   *sqlitex.Handle
	seen map[any][2]int64  // per driver connection: data_version, total_changes() at its last call
	last map[string]string // nil until the first read
}

// OpenLogWatch opens a LogWatch on the SQLite database of url
// ("sqlite:PATH"). The file must exist (a watch never creates one); an
// error wraps the cause.
func OpenLogWatch(ctx context.Context, url string) (*LogWatch, error) {
	loc, err := sqlitex.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if err := loc.MustExist(); err != nil {
		return nil, err
	}
	db, err := sqlitex.OpenShared(ctx, loc)
	if err != nil {
		return nil, err
	}
	return &LogWatch{db: db, seen: map[any][2]int64{}}, nil
}

// WatchKey is the key of a stream in the map Positions returns (stream
// names compare case-insensitively, as sluice_streams' NOCASE does: ASCII
// letters only).
func WatchKey(stream string) string {
	b := []byte(stream)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Positions returns, for each table stream of the database by WatchKey of
// its name, a text that changes whenever a change is logged for the
// stream's table (its change log's last seq), the stream is dropped and
// created again or goes stale (its id and stale mark, not its offset), the
// table's tracking is enabled again or its columns are synced
// (sluice_tracking), or the schema of the database changes (PRAGMA
// schema_version: an ALTER TABLE). Equal texts at two times mean that a
// job reading the stream has nothing new to read between them. A database
// without sluice's catalog yields an empty map. The map is shared between
// calls: do not modify it.
func (w *LogWatch) Positions(ctx context.Context) (map[string]string, error) {
	conn, err := w.db.ReadConn(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	defer conn.Close()
	var id any
	if err := conn.Raw(func(dc any) error { id = dc; return nil }); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	var v [2]int64
	if err := conn.QueryRowContext(ctx, "SELECT data_version, total_changes() FROM pragma_data_version").Scan(&v[0], &v[1]); err != nil {
		return nil, fmt.Errorf("watch: PRAGMA data_version: %w", err)
	}
	if prev, ok := w.seen[id]; ok && w.last != nil && prev == v {
		return w.last, nil
	}
	pos, err := read(ctx, conn)
	if err != nil {
		delete(w.seen, id)
		return nil, err
	}
	if len(w.seen) >= 16 { // connections replaced over the hours: forget them
		clear(w.seen)
	}
	w.seen[id], w.last = v, pos
	return pos, nil
}

// watchSQL reads each stream's position but its change log's last seq.
const watchSQL = `SELECT s.name, s.id, COALESCE(s.stale_since, ''), COALESCE(t.enabled, ''), COALESCE(t.columns, ''), COALESCE(t.log, '')
FROM sluice_streams s LEFT JOIN sluice_tracking t ON t.tbl = s.tbl`

// read reads the positions in one read transaction: whether the catalog's
// tables exist, from the parsed schema (pragma_table_info of each reads no
// page and looks one table up, where a scan of sqlite_schema reads
// megabytes at 1,000 tracked tables and pragma_table_list walks every
// table), the change logs' last seqs in one scan of sqlite_sequence (which
// has no index: a lookup per stream scanned it once per stream), then the
// streams.
func read(ctx context.Context, conn *sql.Conn) (out map[string]string, err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("watch: begin: %w", err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
			err = fmt.Errorf("watch: end the read: %w", rerr)
		}
	}()
	var sv int64
	if err := conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&sv); err != nil {
		return nil, fmt.Errorf("watch: PRAGMA schema_version: %w", err)
	}
	var tracking, streams, seqs int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM pragma_table_info('sluice_tracking')), (SELECT count(*) FROM pragma_table_info('sluice_streams')), (SELECT count(*) FROM pragma_table_info('sqlite_sequence'))`).Scan(&tracking, &streams, &seqs); err != nil {
		return nil, fmt.Errorf("watch: read the catalog: %w", err)
	}
	out = map[string]string{}
	if tracking == 0 || streams == 0 {
		return out, nil // nothing tracked yet
	}
	// No AUTOINCREMENT table yet: no change was ever logged (0).
	last := map[string]int64{}
	if seqs > 0 {
		rows, err := conn.QueryContext(ctx, `SELECT name, seq FROM sqlite_sequence`)
		if err != nil {
			return nil, fmt.Errorf("watch: read the change logs' positions: %w", err)
		}
		for rows.Next() {
			var name string
			var seq sql.NullInt64
			if err := rows.Scan(&name, &seq); err != nil {
				rows.Close()
				return nil, fmt.Errorf("watch: read the change logs' positions: %w", err)
			}
			last[WatchKey(name)] = seq.Int64
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("watch: read the change logs' positions: %w", err)
		}
	}
	rows, err := conn.QueryContext(ctx, watchSQL)
	if err != nil {
		return nil, fmt.Errorf("watch: read the streams: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, id, stale, enabled, columns, log string
		if err := rows.Scan(&name, &id, &stale, &enabled, &columns, &log); err != nil {
			return nil, fmt.Errorf("watch: read the streams: %w", err)
		}
		out[WatchKey(name)] = strconv.FormatInt(last[WatchKey(log)], 10) + "|" + strconv.FormatInt(sv, 10) + "|" + id + "|" + stale + "|" + enabled + "|" + columns
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("watch: read the streams: %w", err)
	}
	return out, nil
}

// Close releases the watch's reference to the file's shared connections.
func (w *LogWatch) Close() error {
	return w.db.Close()
}
