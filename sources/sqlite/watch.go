package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/sluicedata/sluice/internal/sqlitex"
)

// LogWatch tells where the change logs of one SQLite database stand, for
// `sluice serve`'s one watcher per database (serve.PollWatcher): a SQLite
// capture has no notification to listen to, so serve asks this instead of
// running every idle job to find out that nothing changed.
//
// It holds one connection of its own. Each call of Positions first reads
// PRAGMA data_version, which changes only when another connection
// committed to the file (https://sqlite.org/pragma.html#pragma_data_version);
// while it is unchanged the previous answer is returned without reading
// anything else, so an idle database costs one PRAGMA per call.
type LogWatch struct {
	db   *sql.DB
	conn *sql.Conn
	dv   int64
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
	db, err := sqlitex.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("watch %s: %w", loc.Path, err)
	}
	return &LogWatch{db: db, conn: conn}, nil
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
	var dv int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&dv); err != nil {
		return nil, fmt.Errorf("watch: PRAGMA data_version: %w", err)
	}
	if w.last != nil && dv == w.dv {
		return w.last, nil
	}
	pos, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.dv, w.last = dv, pos
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
func (w *LogWatch) read(ctx context.Context) (out map[string]string, err error) {
	if _, err := w.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("watch: begin: %w", err)
	}
	defer func() {
		if _, rerr := w.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
			err = fmt.Errorf("watch: end the read: %w", rerr)
		}
	}()
	var sv int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&sv); err != nil {
		return nil, fmt.Errorf("watch: PRAGMA schema_version: %w", err)
	}
	var tracking, streams, seqs int
	if err := w.conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM pragma_table_info('sluice_tracking')), (SELECT count(*) FROM pragma_table_info('sluice_streams')), (SELECT count(*) FROM pragma_table_info('sqlite_sequence'))`).Scan(&tracking, &streams, &seqs); err != nil {
		return nil, fmt.Errorf("watch: read the catalog: %w", err)
	}
	out = map[string]string{}
	if tracking == 0 || streams == 0 {
		return out, nil // nothing tracked yet
	}
	// No AUTOINCREMENT table yet: no change was ever logged (0).
	last := map[string]int64{}
	if seqs > 0 {
		rows, err := w.conn.QueryContext(ctx, `SELECT name, seq FROM sqlite_sequence`)
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
	rows, err := w.conn.QueryContext(ctx, watchSQL)
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

// Close releases the connection.
func (w *LogWatch) Close() error {
	return errors.Join(w.conn.Close(), w.db.Close())
}
