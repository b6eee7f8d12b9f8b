package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var _ runner.Snapshotter = (*Backend)(nil)

// Snapshot implements runner.Snapshotter for `sluice backfill`.
//
// It opens a read transaction (the database runs in WAL mode, so writers
// go on while it is open and it keeps seeing the state of its first read)
// and, inside it, re-reads the stream (same incarnation, same columns) and
// the change log's last seq: the snapshot's Offset is that seq, so every
// change the snapshot's rows contain is at or before it and every later
// one after it. The table is then read with a keyset scan in primary-key
// order:
//
//	SELECT <columns> FROM "t" WHERE ("k1", "k2") > (?, ?) ORDER BY "k1", "k2" LIMIT ?
//
// Key values are bound in their stored form: the raw values of the last
// row of the previous chunk when `after` is that row's key, else `after`
// encoded per the storage conventions (internal/sqlitex.Encode; a resumed
// backfill). Rows are OpInsert changes with canonical values, version =
// the offset's seq and commit time = the time the snapshot was opened.
// Errors: ErrNoPrimaryKey for a table without a primary key (the scan
// pages by key), runner.ErrNoStream when the stream was recreated,
// ErrSchemaChanged when the table's columns changed, cdc.ErrBadOffset for
// a from that is not an offset of this backend or is after the log.
// While the snapshot is open, WAL checkpoints cannot go past it: the WAL
// file grows with the writes made meanwhile until Close.
func (b *Backend) Snapshot(ctx context.Context, info *runner.StreamInfo, from cdc.Offset) (runner.SnapshotReader, error) {
	if len(info.TableSchema.Key) == 0 {
		return nil, fmt.Errorf("snapshot of %s: %w (a backfill pages through the table by primary key)", info.Table, ErrNoPrimaryKey)
	}
	f, err := parseOffset(from)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", info.Table, err)
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", info.Table, err)
	}
	s, err := b.openSnapshot(ctx, tx, info, f)
	if err != nil {
		_ = tx.Rollback()
		return nil, fmt.Errorf("snapshot of %s: %w", info.Table, err)
	}
	return s, nil
}

func (b *Backend) openSnapshot(ctx context.Context, tx *sql.Tx, info *runner.StreamInfo, from position) (*snapshot, error) {
	// The first read of the transaction fixes its snapshot.
	cur, err := b.streamInfo(ctx, tx, info.Name)
	if err != nil {
		return nil, err
	}
	if cur.ID != info.ID {
		return nil, fmt.Errorf("%w: stream %s was dropped and created again", runner.ErrNoStream, info.Name)
	}
	if !slices.Equal(cur.TableSchema.Names(), info.TableSchema.Names()) || !slices.Equal(cur.TableSchema.Key, info.TableSchema.Key) {
		return nil, fmt.Errorf("%w: table %s has columns %v, the job was planned with %v", ErrSchemaChanged, info.Table, cur.TableSchema.Names(), info.TableSchema.Names())
	}
	seq, err := lastSeq(ctx, tx, logTable(info.Table))
	if err != nil {
		return nil, err
	}
	if from.seq > seq {
		return nil, fmt.Errorf("%w: offset %s is after the last change %d", cdc.ErrBadOffset, from, seq)
	}
	s := &snapshot{b: b, tx: tx, info: cur, from: from, seq: seq, at: time.Now().UTC().Truncate(time.Millisecond)}
	s.keyIdx, _ = cur.TableSchema.KeyIndexes()
	s.sql(cur.TableSchema)
	return s, nil
}

// snapshot is a runner.SnapshotReader over one read transaction.
type snapshot struct {
	b      *Backend
	tx     *sql.Tx
	info   *runner.StreamInfo
	from   position // the offset Catchup reads from
	seq    int64    // the offset: the change log's last seq in the snapshot
	at     time.Time
	keyIdx []int

	selectFirst, selectAfter, count, keys string

	lastKey []any // canonical key of the last row Chunk returned
	lastRaw []any // the same key as stored
}

// sql renders the snapshot's statements.
func (s *snapshot) sql(schema cdc.Schema) {
	cols := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		cols[i] = sqlitex.Quote(c.Name)
	}
	keys := make([]string, len(schema.Key))
	marks := make([]string, len(schema.Key))
	for i, k := range schema.Key {
		keys[i], marks[i] = sqlitex.Quote(k), "?"
	}
	t := sqlitex.Quote(s.info.Table)
	s.keys = "(" + strings.Join(keys, ", ") + ")"
	base := "SELECT " + strings.Join(cols, ", ") + " FROM " + t
	order := " ORDER BY " + strings.Join(keys, ", ") + " LIMIT ?"
	s.selectFirst = base + order
	s.selectAfter = base + " WHERE " + s.keys + " > (" + strings.Join(marks, ", ") + ")" + order
	s.count = "SELECT count(*) FROM " + t
}

func (s *snapshot) Offset() cdc.Offset { return position{seq: s.seq}.offset() }

func (s *snapshot) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := s.tx.QueryRowContext(ctx, s.count).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows of %s: %w", s.info.Table, err)
	}
	return n, nil
}

func (s *snapshot) Steps() []plan.Step {
	return []plan.Step{
		{Where: "source", What: "open a read transaction (the snapshot); its offset is the change log's last seq, read in it",
			SQL: "BEGIN;\nSELECT seq FROM sqlite_sequence WHERE name = " + sqlitex.QuoteString(logTable(s.info.Table))},
		{Where: "source", What: "read the table in primary-key order, one chunk after the last key", SQL: s.selectAfter},
	}
}

// rawKey returns the stored form of key after.
func (s *snapshot) rawKey(after []any) ([]any, error) {
	cols := s.info.TableSchema.Columns
	if s.lastRaw != nil && sameKey(after, s.lastKey, cols, s.keyIdx) {
		return s.lastRaw, nil
	}
	if len(after) != len(s.keyIdx) {
		return nil, fmt.Errorf("key %v has %d values, the primary key of %s has %d columns", after, len(after), s.info.Table, len(s.keyIdx))
	}
	raw := make([]any, len(after))
	for i, v := range after {
		enc, err := sqlitex.Encode(v, cols[s.keyIdx[i]].Type)
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", cols[s.keyIdx[i]].Name, err)
		}
		raw[i] = enc
	}
	return raw, nil
}

func sameKey(a, b []any, cols []cdc.Column, idx []int) bool {
	if len(a) != len(b) || len(a) != len(idx) {
		return false
	}
	for i := range a {
		t := cols[idx[i]].Type
		if (a[i] == nil) != (b[i] == nil) || fmt.Sprintf("%T", a[i]) != fmt.Sprintf("%T", b[i]) || cdc.FormatValue(a[i], t) != cdc.FormatValue(b[i], t) {
			return false
		}
	}
	return true
}

func (s *snapshot) Chunk(ctx context.Context, after []any, n int) ([]cdc.Change, error) {
	if n <= 0 {
		return nil, fmt.Errorf("chunk size %d: want at least 1", n)
	}
	q, args := s.selectFirst, []any{}
	if after != nil {
		raw, err := s.rawKey(after)
		if err != nil {
			return nil, fmt.Errorf("read %s after key %v: %w", s.info.Table, after, err)
		}
		q, args = s.selectAfter, append(args, raw...)
	}
	args = append(args, n)
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s after key %v: %w", s.info.Table, after, err)
	}
	defer rows.Close()
	cols := s.info.TableSchema.Columns
	out := make([]cdc.Change, 0, min(n, 4096))
	var raw []any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.info.Table, err)
		}
		raw = make([]any, len(s.keyIdx))
		for i, k := range s.keyIdx {
			raw[i] = vals[k]
			if vals[k] == nil {
				return nil, fmt.Errorf("read %s: row with key %s: primary key column %s is NULL; a keyset scan cannot page past it (make the column NOT NULL)", s.info.Table, s.keyText(raw), cols[k].Name)
			}
		}
		if err := sqlitex.DecodeRow(vals, cols); err != nil {
			return nil, fmt.Errorf("read %s: row with key %s: %w", s.info.Table, s.keyText(raw), err)
		}
		out = append(out, cdc.Change{Op: cdc.OpInsert, CommitVersion: s.seq, CommitTime: s.at, Row: vals})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s after key %v: %w", s.info.Table, after, err)
	}
	if len(out) > 0 {
		last := out[len(out)-1].Row
		s.lastKey = make([]any, len(s.keyIdx))
		for i, k := range s.keyIdx {
			s.lastKey[i] = last[k]
		}
		s.lastRaw = raw
	}
	return out, nil
}

// keyText renders a stored key for errors: (k1=v1, k2=v2).
func (s *snapshot) keyText(raw []any) string {
	parts := make([]string, len(s.keyIdx))
	for i, k := range s.keyIdx {
		parts[i] = fmt.Sprintf("%s=%v", s.info.TableSchema.Columns[k].Name, raw[i])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Catchup reads the stream's changes in (from, Offset()] restricted to the
// keys at or before upTo, with the query of a stream read (ChangesQuery)
// run in the snapshot's transaction and filtered by key in SQL, so the
// comparison is the one Chunk's ORDER BY uses. It returns an error
// wrapping ErrBehindOffset when from is behind the stream's offset (the
// log may have been purged).
func (s *snapshot) Catchup(ctx context.Context, upTo []any, opt runner.ReadOptions) (runner.ChangeReader, error) {
	to := s.Offset()
	if !s.from.initial && s.from.seq == s.seq {
		return &catchup{point: to, done: true}, nil
	}
	if st, err := parseOffset(s.info.Offset); err == nil && s.from.seq < st.seq {
		return nil, fmt.Errorf("%w: catching up stream %s from %s, behind its offset %s: another consumer moved it and the change log may no longer hold the changes", ErrBehindOffset, s.info.Name, s.from, s.info.Offset)
	}
	raw, err := s.rawKey(upTo)
	if err != nil {
		return nil, fmt.Errorf("catch up %s up to key %v: %w", s.info.Name, upTo, err)
	}
	if err := checkAppendAbsent(ctx, s.tx, s.info, s.from.offset(), to); err != nil {
		return nil, err
	}
	q, args, err := changesQuery(s.info, s.from.offset(), to, true)
	if err != nil {
		return nil, err
	}
	cols := make([]string, len(s.info.TableSchema.Columns))
	for i, c := range s.info.TableSchema.Columns {
		cols[i] = sqlitex.Quote(c.Name)
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(raw)), ", ")
	q = `SELECT "__change_type", "__commit_version", "__commit_timestamp", ` + strings.Join(cols, ", ") +
		` FROM (` + q + `) WHERE ` + s.keys + ` <= (` + marks + `) ORDER BY "__commit_version", ` + sqlitex.Quote(OrderColumn)
	rows, err := s.tx.QueryContext(ctx, q, append(args, raw...)...)
	if err != nil {
		return nil, fmt.Errorf("catch up stream %s: %w", s.info.Name, err)
	}
	n := opt.BatchSize
	if n <= 0 {
		n = DefaultBatchSize
	}
	return &catchup{rows: rows, cols: s.info.TableSchema.Columns, schema: s.info.TableSchema, point: to, batch: n}, nil
}

func (s *snapshot) Close() error {
	err := s.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		err = nil
	}
	return err
}

// catchup is the ChangeReader of Catchup; closing it leaves the snapshot's
// transaction open.
type catchup struct {
	rows   *sql.Rows
	cols   []cdc.Column
	schema cdc.Schema // the table's, for the key a decode error names
	point  cdc.Offset
	batch  int
	done   bool
}

func (c *catchup) ReadPoint() cdc.Offset { return c.point }

func (c *catchup) Next(ctx context.Context) ([]cdc.Change, error) {
	if c.done {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []cdc.Change
	for len(out) < c.batch {
		if !c.rows.Next() {
			if err := c.rows.Err(); err != nil {
				return nil, fmt.Errorf("catch up: %w", err)
			}
			c.done = true
			break
		}
		ch, err := scanChange(c.rows, c.cols, c.schema)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	if len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

func (c *catchup) Close() error {
	if c.rows != nil {
		return c.rows.Close()
	}
	return nil
}
