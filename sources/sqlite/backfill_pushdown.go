package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sinks/changerel"
	sinksqlite "github.com/sluicedata/sluice/sinks/sqlite"
)

var _ runner.EngineCopier = (*snapshot)(nil)

// attachedSource is the schema name a backfill into another SQLite file
// attaches the source file under, on the sink's connection.
const attachedSource = "sluice_src"

// EngineCopy implements runner.EngineCopier: a backfill from this
// snapshot into a SQLite sink copies its chunks inside SQLite, with no row
// passing through sluice. When the sink is another file, the source file
// is attached read-only to a connection of the sink
// (ATTACH 'file:…?mode=ro' AS sluice_src), so its write transactions lock
// only the sink file. Each chunk is one BEGIN IMMEDIATE transaction of the
// sink's database that
//
//  1. sets the target up and checks the job's checkpoint (the sink's
//     Attach and the runner's compare-and-set);
//  2. reads the source change log's last seq: when it is no longer the
//     snapshot's offset the table changed since the snapshot (every write
//     to a tracked table logs a change) and the chunk is left to the
//     snapshot read through sluice;
//  3. takes the chunk's last key (LIMIT 2 OFFSET n-1 in key order, read
//     just before the transaction with whether a row follows, which
//     sets the commit's PRAGMA synchronous; it holds in the transaction
//     because the table is still the snapshot's);
//  4. copies the chunk with one INSERT … SELECT (append-like modes) or the
//     sink's merge statements over the chunk (merge, history, SQL MERGE):
//     values are normalized to the form sluice writes
//     (sinksqlite.NormalizeSQL; for a column declared as sluice declares
//     its type, only their storage class: storedAsIs), then filtered and
//     projected by the SQL package expr renders, as the pushdown of a run;
//  5. stores the backfill state (or, with the last chunk, the hand-off)
//     as the job's checkpoint and commits.
//
// It refuses (runner.ErrNoPushdown) a sink that is not SQLite, an
// in-memory database on either side of another-file copy, a filter or
// projection without SQL form and a primary key of FLOAT or DOUBLE
// columns (their key values cannot be written exactly into SQL).
func (s *snapshot) EngineCopy(ctx context.Context, p *plan.Plan, sink runner.Sink) (runner.EngineCopy, error) {
	dst, ok := sink.(*Backend)
	if !ok {
		return nil, fmt.Errorf("%w: the sink is not SQLite", runner.ErrNoPushdown)
	}
	same := dst.identity == s.b.identity
	if !same && (dst.loc.Memory || s.b.loc.Memory) {
		return nil, fmt.Errorf("%w: an in-memory database cannot be attached to another", runner.ErrNoPushdown)
	}
	cols := s.info.TableSchema.Columns
	for _, k := range s.keyIdx {
		if kd := cols[k].Type.Kind; kd == cdc.KindFloat || kd == cdc.KindDouble {
			return nil, fmt.Errorf("%w: primary key column %s is %s", runner.ErrNoPushdown, cols[k].Name, cols[k].Type)
		}
	}
	e := &engineCopy{s: s, dst: dst, same: same, schema: "main"}
	if !same {
		e.schema = attachedSource
	}
	declared, err := declaredTypes(ctx, s.tx, s.info.Table)
	if err != nil {
		return nil, fmt.Errorf("read the declared types of %s: %w", s.info.Table, err)
	}
	if err := e.compile(p, declared); err != nil {
		return nil, err
	}
	var ddl string
	if err := s.tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", s.info.Table).Scan(&ddl); err != nil {
		return nil, fmt.Errorf("read the definition of %s: %w", s.info.Table, err)
	}
	e.checked = checkedColumns(p, declared, ddl)
	return e, nil
}

// checkedColumns lists the sink's DECIMAL columns whose every value the
// chunks copy already passes sluice's DECIMAL check
// (sqlitex.DecimalCheckSQL), so that the target need not run it again
// (sinksqlite Tx.InsertRelationChecked): a column projected as a bare
// reference to a source column of the same type that is declared as
// sluice declares it (storedAsIs: a text value is copied as stored, any
// other goes through sluice_sink_fit, which writes a number's text or
// fails) and whose table definition ddl carries that CHECK on it (so
// every stored text passed it when written).
func checkedColumns(p *plan.Plan, declared map[string]string, ddl string) []string {
	var out []string
	for i, it := range p.Project {
		sc := p.Sink.Schema.Columns[i]
		if it.Expr == nil || sc.Type.Kind != cdc.KindDecimal {
			continue
		}
		ref, ok := it.Expr.Column()
		if !ok || ref.Col < 0 || ref.Col >= len(p.Source.Schema.Columns) {
			continue
		}
		src := p.Source.Schema.Columns[ref.Col]
		if src.Type != sc.Type || !storedAsIs(src, declared[src.Name]) || !strings.Contains(ddl, sqlitex.DecimalCheckSQL(src.Name)) {
			continue
		}
		out = append(out, sc.Name)
	}
	return out
}

// storedAsIs reports whether column c, whose declared type is declared,
// is declared as sluice declares its logical type (sqlitex.DeclaredType):
// the target column sluice creates for it then has the same declared type
// and affinity, and a value of the right storage class is copied in its
// stored form (sinksqlite.NormalizeClassSQL: a DECIMAL with another scale,
// a TIMESTAMP with 'T' and 'Z' arrive as stored and read back as the same
// value; a DECIMAL that is not a number is refused by the target's CHECK,
// as any write of it is, and the chunk goes through sluice, which names
// the row). Columns declared otherwise (a user's DECIMAL(12,2), of NUMERIC
// affinity, stores 2.5 as a REAL) are normalized in full
// (sinksqlite.NormalizeSQL).
func storedAsIs(c cdc.Column, declared string) bool {
	return declared != "" && strings.EqualFold(strings.TrimSpace(declared), sqlitex.DeclaredType(c.Type))
}

// engineCopy is the runner.EngineCopy of a snapshot.
type engineCopy struct {
	s      *snapshot
	dst    *Backend
	same   bool   // source and sink are one file
	schema string // the source's schema name on the sink's connection
	conn   *sql.Conn
	sync   string // the PRAGMA synchronous conn was last set to

	table   string // the source table, qualified
	keys    string // (k1, k2)
	keyList string // k1, k2
	keyText string // SQL naming the row's key, over __t
	inner   string // SELECT … with markWhere and markLimit
	outer   string // the relation's SELECT over (markInner) AS __s
	at      string // the snapshot's time as TIMESTAMP storage form
	// checked: the sink's DECIMAL columns whose values already pass
	// sluice's DECIMAL check (checkedColumns)
	checked []string
}

func (e *engineCopy) compile(p *plan.Plan, declared map[string]string) error {
	info := e.s.info
	src := p.Source.Schema.Columns
	col := func(_, idx int) string { return "__s." + sqlitex.Quote(src[idx].Name) }
	where := ""
	if p.Filter != nil && p.Filter.Expr != nil {
		w, err := p.Filter.Expr.SQL(expr.SQLite, col)
		if err != nil {
			return fmt.Errorf("%w: filter %s: %v", runner.ErrNoPushdown, p.Filter.Text, err)
		}
		where = " WHERE " + w
	}
	if len(p.Project) != len(p.Sink.Schema.Columns) {
		return fmt.Errorf("%w: %d projected columns for %d sink columns", runner.ErrNoPushdown, len(p.Project), len(p.Sink.Schema.Columns))
	}
	keyed := p.Sink.Merge != nil || p.Sink.Mode.Keyed()
	keys := make([]string, len(info.TableSchema.Key))
	for i, k := range info.TableSchema.Key {
		keys[i] = "__t." + sqlitex.Quote(k)
	}
	e.keyList = strings.Join(keys, ", ")
	e.keys = "(" + e.keyList + ")"
	e.keyText = sinksqlite.KeyTextSQL(info.TableSchema.Key, "__t")
	e.table = e.schema + "." + sqlitex.Quote(info.Table)
	at, err := sqlitex.Encode(e.s.at, cdc.TypeTimestamp)
	if err != nil {
		return err
	}
	e.at = at.(string)

	inner := []string{"'INSERT' AS " + sqlitex.Quote(cdc.ColChangeType), strconv.FormatInt(e.s.seq, 10) + " AS " + sqlitex.Quote(cdc.ColCommitVersion),
		sqlitex.QuoteString(e.at) + " AS " + sqlitex.Quote(cdc.ColCommitTimestamp)}
	ord := "0"
	if keyed {
		// the order a chunk through sluice stages its rows in
		inner = append(inner, "row_number() OVER (ORDER BY "+e.keyList+") AS \"__ord\"")
		ord = `__s."__ord"`
	}
	for _, c := range info.TableSchema.Columns {
		x := "__t." + sqlitex.Quote(c.Name)
		if storedAsIs(c, declared[c.Name]) {
			x = sinksqlite.NormalizeClassSQL(x, c.Type, c.Name, e.keyText)
		} else {
			x = sinksqlite.NormalizeSQL(x, c.Type, c.Name, e.keyText)
		}
		inner = append(inner, x+" AS "+sqlitex.Quote(c.Name))
	}
	e.inner = "SELECT " + strings.Join(inner, ", ") + " FROM " + e.table + " AS __t" + markWhere + " ORDER BY " + e.keyList + " LIMIT " + markLimit

	sel := []string{`__s."__change_type" AS "__op"`, `__s."__commit_version" AS "__ver"`, ord + ` AS "__ord"`, `NULL AS "__present"`}
	if p.Sink.NeedsCommitTime() {
		sel = append(sel, sqlitex.QuoteString(e.s.at.Format(sinksqlite.CommitTimeLayout))+" AS "+sqlitex.Quote(changerel.TS))
	}
	for i, it := range p.Project {
		if it.Expr == nil {
			return fmt.Errorf("%w: projection %s is not bound", runner.ErrNoPushdown, it.Name)
		}
		x, err := it.Expr.SQL(expr.SQLite, col)
		if err != nil {
			return fmt.Errorf("%w: projection %s: %v", runner.ErrNoPushdown, it.Text, err)
		}
		sel = append(sel, x+" AS "+sqlitex.Quote(p.Sink.Schema.Columns[i].Name))
	}
	e.outer = "SELECT " + strings.Join(sel, ", ") + " FROM (" + markInner + ") AS __s" + where
	return nil
}

// relation renders the chunk's change relation: the rows after the key
// whose stored values are lits (SQL literals; nil: from the first), at
// most limit (a SQL literal).
func (e *engineCopy) relation(lits []string, limit string) string {
	inner := strings.Replace(strings.Replace(e.inner, markWhere, e.afterClause(lits), 1), markLimit, limit, 1)
	return "(" + strings.Replace(e.outer, markInner, inner, 1) + ")"
}

// Markers of the parts of a chunk's statement that vary (the SQL around
// them may hold any text, '%' included).
const (
	markWhere = "\x00where\x00"
	markLimit = "\x00limit\x00"
	markInner = "\x00inner\x00"
)

func (e *engineCopy) afterClause(lits []string) string {
	if lits == nil {
		return ""
	}
	return " WHERE " + e.keys + " > (" + strings.Join(lits, ", ") + ")"
}

func (e *engineCopy) attachSQL() string {
	u := url.URL{Scheme: "file", Path: e.s.b.loc.Path, RawQuery: "mode=ro"}
	return "ATTACH DATABASE " + sqlitex.QuoteString(u.String()) + " AS " + attachedSource
}

func (e *engineCopy) seqSQL() string {
	return "SELECT seq FROM " + e.schema + ".sqlite_sequence WHERE name = ?"
}

// Steps implements runner.EngineCopy.
func (e *engineCopy) Steps(sp runner.SinkPlan) []plan.Step {
	marks := make([]string, len(e.s.keyIdx))
	for i := range marks {
		marks[i] = "?"
	}
	var out []plan.Step
	if !e.same {
		out = append(out, plan.Step{Where: "sink", What: "once: attach the source file read-only to a connection of the sink", SQL: e.attachSQL()})
	}
	out = append(out,
		plan.Step{Where: "source", What: "per chunk, before its transaction: find the chunk's last key and whether a row follows it (the chunk commits with PRAGMA synchronous = FULL when none does; its transaction uses this key when the table is still as in the snapshot)", SQL: "SELECT " + e.keyList + " FROM " + e.table + " AS __t" + e.afterClause(marks) + " ORDER BY " + e.keyList + " LIMIT 2 OFFSET ?"},
		plan.Step{Where: "sink", What: "begin the chunk's write transaction of the sink (takes its write lock only)", SQL: "BEGIN IMMEDIATE"})
	ps, ok := sp.(*sinksqlite.Plan)
	var writes []plan.Step
	if ok {
		var err error
		if writes, err = ps.RelationSteps(context.Background(), e.relation(marks, "?")); err != nil {
			writes = []plan.Step{{Where: "sink", What: "write the chunk: " + err.Error()}}
		}
	}
	out = append(out,
		plan.Step{Where: "source", What: "the table is still as in the snapshot only if the change log's last seq is still the snapshot's offset (else the rest goes through sluice)", SQL: strings.Replace(e.seqSQL(), "?", sqlitex.QuoteString(logTable(e.s.info.Table)), 1)},
	)
	if len(e.checked) > 0 && ok && ps.Appends() {
		out = append(out, plan.Step{Where: "sink", What: "the insert runs with PRAGMA ignore_check_constraints when the target's only CHECKs are sluice's DECIMAL checks on " +
			strings.Join(e.checked, ", ") + ": the source's columns carry the same CHECK and their values are copied as stored"})
	}
	out = append(out, writes...)
	return append(out, plan.Step{Where: "sink", What: "commit the chunk and the backfill state together", SQL: "COMMIT"})
}

// open takes the connection the chunks run on, with the source attached
// when it is another file.
func (e *engineCopy) open(ctx context.Context) error {
	if e.conn != nil {
		return nil
	}
	conn, err := e.dst.db.Conn(ctx)
	if err != nil {
		return err
	}
	if !e.same {
		if _, err := conn.ExecContext(ctx, e.attachSQL()); err != nil {
			conn.Close()
			return fmt.Errorf("attach the source %s: %w", e.s.b.loc.Path, err)
		}
	}
	e.conn = conn
	return nil
}

// Close implements runner.EngineCopy; it may be called more than once.
func (e *engineCopy) Close() error {
	return e.release(context.Background())
}

// release hands the sink's write connection back after a chunk (or at
// Close): the process has one write connection per file
// (sqlitex.OpenShared), which other jobs and the application's statements
// in this process need between chunks. It detaches the source and puts
// PRAGMA synchronous back to NORMAL (sqlitex.Open's) when syncLevel
// raised it; open takes the connection again for the next chunk.
func (e *engineCopy) release(ctx context.Context) error {
	if e.conn == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	var err error
	if !e.same {
		_, err = e.conn.ExecContext(ctx, "DETACH DATABASE "+attachedSource)
	}
	if e.sync != "" && e.sync != "NORMAL" {
		if _, serr := e.conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err == nil {
			err = serr
		}
	}
	if cerr := e.conn.Close(); err == nil {
		err = cerr
	}
	e.conn, e.sync = nil, ""
	return err
}

// Chunk implements runner.EngineCopy.
func (e *engineCopy) Chunk(ctx context.Context, sp runner.SinkPlan, job string, after []any, n int,
	check func(context.Context, runner.SinkTx) error,
	checkpoint func(last []any, rows int64, final bool) runner.Checkpoint) (runner.EngineChunk, error) {
	ps, ok := sp.(*sinksqlite.Plan)
	if !ok {
		return runner.EngineChunk{}, fmt.Errorf("%w: the sink plan is not SQLite's", runner.ErrNoPushdown)
	}
	if n <= 0 {
		return runner.EngineChunk{}, fmt.Errorf("chunk size %d: want at least 1", n)
	}
	if err := e.open(ctx); err != nil {
		return runner.EngineChunk{}, err
	}
	defer func() { _ = e.release(ctx) }()
	var args []any
	if after != nil {
		var err error
		if args, err = e.s.rawKey(after); err != nil {
			return runner.EngineChunk{}, fmt.Errorf("read %s after key %v: %w", e.s.info.Table, after, err)
		}
	}
	end, err := e.probe(ctx, args, n)
	if err != nil {
		return runner.EngineChunk{}, err
	}
	if !e.same {
		if err := e.syncLevel(ctx, end); err != nil {
			return runner.EngineChunk{}, err
		}
	}
	if err := sqlitex.Begin(ctx, e.conn); err != nil {
		return runner.EngineChunk{}, fmt.Errorf("sqlite sink: begin write transaction: %w", err)
	}
	r, raw, err := e.chunk(ctx, ps, job, after, args, end, n, check, checkpoint)
	if err != nil || r.Moved {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		sqlitex.DiscardIfCannotWrite(e.conn, err)
		var ve *cdc.ValueError
		if err != nil && (valueCaused(err) || errors.As(err, &ve)) && !errors.Is(err, runner.ErrPushdownValue) {
			err = fmt.Errorf("%w: %w", runner.ErrPushdownValue, err)
		}
		return runner.EngineChunk{Moved: r.Moved && err == nil}, err
	}
	if _, err := e.conn.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return runner.EngineChunk{}, fmt.Errorf("sqlite sink: commit: %w", err)
	}
	if r.Last != nil {
		e.s.lastKey, e.s.lastRaw = r.Last, raw
	}
	return r, nil
}

// chunk runs in the chunk's transaction; args is after in its stored
// form and end what the probe before the transaction found. The probe's
// reads hold in the transaction once the change log's last seq is the
// snapshot's offset: every write to the table logs a change, so the
// table was the snapshot's from the snapshot until then, the probe
// included.
func (e *engineCopy) chunk(ctx context.Context, ps *sinksqlite.Plan, job string, after, args []any, end chunkEnd, n int,
	check func(context.Context, runner.SinkTx) error,
	checkpoint func(last []any, rows int64, final bool) runner.Checkpoint) (runner.EngineChunk, []any, error) {
	s := e.s
	tx, err := ps.Attach(ctx, e.conn, job)
	if err != nil {
		return runner.EngineChunk{}, nil, err
	}
	defer tx.Rollback(ctx)
	if err := check(ctx, tx); err != nil {
		return runner.EngineChunk{}, nil, err
	}
	var seq sql.NullInt64
	if err := e.conn.QueryRowContext(ctx, e.seqSQL(), logTable(s.info.Table)).Scan(&seq); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return runner.EngineChunk{}, nil, fmt.Errorf("read change log position of %s: %w", s.info.Table, err)
	}
	if seq.Int64 != s.seq {
		return runner.EngineChunk{Moved: true}, nil, nil
	}
	var lits []string
	if after != nil {
		if lits, err = literals(args); err != nil {
			return runner.EngineChunk{}, nil, fmt.Errorf("%w: key %v: %v", runner.ErrPushdownValue, after, err)
		}
	} else {
		// A NULL key cannot be paged past: the copy through sluice names it.
		var nulls []string
		for _, k := range s.info.TableSchema.Key {
			nulls = append(nulls, "__t."+sqlitex.Quote(k)+" IS NULL")
		}
		var one int
		err := e.conn.QueryRowContext(ctx, "SELECT 1 FROM "+e.table+" AS __t WHERE "+strings.Join(nulls, " OR ")+" LIMIT 1").Scan(&one)
		if err == nil {
			return runner.EngineChunk{}, nil, fmt.Errorf("%w: table %s has a row with a NULL primary key", runner.ErrPushdownValue, s.info.Table)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return runner.EngineChunk{}, nil, err
		}
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
	if after != nil {
		marks = " WHERE " + e.keys + " > (" + marks + ")"
	}
	r := runner.EngineChunk{Rows: int64(n)}
	raw := end.raw
	if raw == nil {
		// fewer than n rows left: the table's last chunk
		raw = make([]any, len(s.keyIdx))
		ptrs := make([]any, len(raw))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		r.Final = true
		if err := e.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+e.table+" AS __t"+marks, args...).Scan(&r.Rows); err != nil {
			return runner.EngineChunk{}, nil, fmt.Errorf("count rows of %s: %w", s.info.Table, err)
		}
		if r.Rows == 0 {
			raw = nil
		} else {
			desc := strings.ReplaceAll(e.keyList, ", ", " DESC, ") + " DESC"
			if err := e.conn.QueryRowContext(ctx, "SELECT "+e.keyList+" FROM "+e.table+" AS __t ORDER BY "+desc+" LIMIT 1").Scan(ptrs...); err != nil {
				return runner.EngineChunk{}, nil, fmt.Errorf("read the last key of %s: %w", s.info.Table, err)
			}
		}
	}
	if r.Rows > 0 {
		rel := e.relation(lits, strconv.Itoa(n))
		if ps.Appends() {
			_, err = tx.InsertRelationChecked(ctx, rel, e.checked)
		} else {
			err = tx.ApplyRelation(ctx, rel)
		}
		if err != nil {
			return runner.EngineChunk{}, nil, err
		}
	}
	if raw != nil {
		cols := s.info.TableSchema.Columns
		r.Last = make([]any, len(raw))
		for i, k := range s.keyIdx {
			if r.Last[i], err = sqlitex.Decode(raw[i], cols[k].Type); err != nil {
				return runner.EngineChunk{}, nil, fmt.Errorf("%w: read %s: key column %s: %w", runner.ErrPushdownValue, s.info.Table, cols[k].Name, err)
			}
		}
	}
	st, err := tx.Commit(ctx, checkpoint(r.Last, r.Rows, r.Final))
	if err != nil {
		return runner.EngineChunk{}, nil, err
	}
	r.Written = st.Written
	return r, raw, nil
}

// literals renders stored key values as SQL literals that compare equal
// to them; a REAL cannot be written exactly and is refused.
func literals(raw []any) ([]string, error) {
	out := make([]string, len(raw))
	for i, v := range raw {
		switch x := v.(type) {
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		case string:
			if strings.IndexByte(x, 0) >= 0 {
				return nil, fmt.Errorf("text with a NUL byte")
			}
			out[i] = sqlitex.QuoteString(x)
		case []byte:
			out[i] = "X'" + hex.EncodeToString(x) + "'"
		default:
			return nil, fmt.Errorf("a %T key value has no exact SQL literal", v)
		}
	}
	return out, nil
}

// chunkEnd is what the probe before a chunk's transaction found: the
// stored key of the chunk's last row, the n-th after the chunk's start
// (nil when fewer rows are left: the chunk is the table's last), and
// whether a row follows it.
type chunkEnd struct {
	raw  []any
	more bool
}

// probe reads the chunk's end for a chunk of n rows after the stored key
// args (nil: from the first row), before its transaction (Chunk): one walk
// of the key index tells both the chunk's last key and the PRAGMA
// synchronous it commits with (syncLevel). The chunk's transaction uses it
// when the table is still the snapshot's (chunk).
func (e *engineCopy) probe(ctx context.Context, args []any, n int) (chunkEnd, error) {
	where := ""
	if args != nil {
		where = " WHERE " + e.keys + " > (" + strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + ")"
	}
	rows, err := e.conn.QueryContext(ctx, "SELECT "+e.keyList+" FROM "+e.table+" AS __t"+where+" ORDER BY "+e.keyList+" LIMIT 2 OFFSET ?", append(slices.Clone(args), n-1)...)
	if err != nil {
		return chunkEnd{}, fmt.Errorf("read %s: %w", e.s.info.Table, err)
	}
	defer rows.Close()
	var end chunkEnd
	for rows.Next() {
		if end.raw != nil {
			end.more = true
			break
		}
		end.raw = make([]any, len(e.s.keyIdx))
		ptrs := make([]any, len(end.raw))
		for i := range end.raw {
			ptrs[i] = &end.raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return chunkEnd{}, fmt.Errorf("read %s: %w", e.s.info.Table, err)
		}
	}
	if err := rows.Err(); err != nil {
		return chunkEnd{}, fmt.Errorf("read %s: %w", e.s.info.Table, err)
	}
	return end, nil
}

// syncLevel sets the connection's PRAGMA synchronous for the chunk whose
// probe found end (the safety level cannot change inside a transaction):
// NORMAL for a chunk that is not the table's last (a power loss may undo
// it, rows and state together, as an interruption would), FULL for the
// last, whose commit hands off and must be on disk before the source's
// stream moves (see sinks/sqlite Plan.Begin; in WAL mode FULL syncs the
// log with every earlier chunk's frames). When the table changed since the
// probe the chunk is not copied (Moved).
func (e *engineCopy) syncLevel(ctx context.Context, end chunkEnd) error {
	level := "FULL"
	if end.more {
		level = "NORMAL" // a row after this chunk
	}
	if level == e.sync {
		return nil
	}
	if _, err := e.conn.ExecContext(ctx, "PRAGMA synchronous = "+level); err != nil {
		return fmt.Errorf("sqlite sink: PRAGMA synchronous = %s: %w", level, err)
	}
	e.sync = level
	return nil
}
