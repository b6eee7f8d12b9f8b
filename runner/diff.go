package runner

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/internal/rowcmp"
	"github.com/sluicedata/sluice/internal/rowhash"
	"github.com/sluicedata/sluice/plan"
)

// DefaultDiffBits is the number of key-hash bits that pick a row's bucket
// (2^16 buckets) when DiffOptions.Bits is not set.
const DefaultDiffBits = 16

// DiffOptions tune Runner.Diff.
type DiffOptions struct {
	// Limit is the number of example rows to return (0: none).
	Limit int
	// Bits is the number of key-hash bits per bucket, 1–24; 0 →
	// DefaultDiffBits.
	Bits int
}

// DiffResult is what Runner.Diff found.
type DiffResult struct {
	Job    string
	Source string // the source table
	Target string // the target table
	Mode   plan.Mode
	// Keys and Columns name the compared columns (Columns includes Keys).
	Keys    []string
	Columns []string
	// Skipped are projected columns not compared: they read the stream's
	// metadata (__change_type, __commit_version, __commit_timestamp), which
	// the table's rows do not have.
	Skipped []string
	// SourceRows and TargetRows count the rows compared on each side.
	SourceRows, TargetRows int64
	// Missing counts keys the source has and the target lacks; Extra keys
	// the target has and the source lacks; Different keys on both sides
	// whose columns differ.
	Missing, Extra, Different int64
	// ExtraExpected is true when the job keeps deleted rows (on_delete:
	// ignore): extra rows are then not a difference.
	ExtraExpected bool
	// Examples are up to DiffOptions.Limit differing rows: the first in
	// the order of kind ("different", "extra", "missing"), then key text.
	Examples []DiffExample
	// Buckets and BucketsDiffer count the non-empty key-hash buckets and
	// those whose rows were fetched.
	Buckets, BucketsDiffer int
	// Pending describes the changes the job has not consumed yet, read
	// before the comparison.
	Pending DiffPending
	Start   time.Time // UTC
	End     time.Time // UTC
}

// Equal reports whether the target equals the source.
func (d *DiffResult) Equal() bool {
	return d.Missing == 0 && d.Different == 0 && (d.Extra == 0 || d.ExtraExpected)
}

// DiffPending is the job's stream position and what is pending after it.
type DiffPending struct {
	// Offset is the position the job's next run reads from (its checkpoint,
	// else the stream's offset).
	Offset cdc.Offset
	// Changes counts the changes pending after Offset, by change type.
	Changes map[cdc.Op]int64
	// Total is the sum of Changes.
	Total int64
	// Oldest is the commit time of the oldest pending change (zero when
	// none); Lag is the time from it to the check.
	Oldest time.Time
	Lag    time.Duration
}

// DiffExample is one differing row.
type DiffExample struct {
	// Kind is "missing" (not in the target), "extra" (not in the source) or
	// "different".
	Kind string
	// Key holds the key columns' values as text (nil for NULL), in
	// DiffResult.Keys order.
	Key []*string
	// Columns are the differing columns (for "different"), each with the
	// source's and the target's value.
	Columns []DiffValue
}

// DiffValue is one column's value on both sides, as canonical text
// (internal/rowhash; nil for NULL).
type DiffValue struct {
	Column string
	Source *string
	Target *string
}

// show returns the display form of a canonical text (rowcmp.Canon): nil
// for NULL.
func show(canon string) *string {
	if canon == rowcmp.Null {
		return nil
	}
	s := rowcmp.Text(canon)
	return &s
}

// Diff is `sluice diff JOB`: it compares the target of a merge or history
// job with its source — the source table's current rows, filtered by the
// job's filter on values (a table row stands for the INSERT or
// UPDATE_AFTER that made it: the filter keeps it when it keeps either)
// and projected as the job projects them — against the target's rows
// (history: the current versions, __valid_to IS NULL; a soft-delete merge:
// the rows without __deleted_at), matched by the job's keys. Values
// compare by internal/rowcmp's rules (NULL differs from the empty
// string, DECIMAL by number, TIMESTAMP by instant).
//
// # How
//
// Both databases hash their own rows (internal/rowhash: an MD5 of a
// canonical text of each row, computed in SQL on PostgreSQL and by a Go
// function inside SQLite): each row falls into one of 2^Bits buckets by
// the hash of its key, and one scan per side returns every bucket's count
// and hash sums. Buckets whose sums agree hold equal rows (up to a 64-bit
// hash collision); for the others a second scan per side returns those
// buckets' rows only, ordered by bucket, which are matched by key in Go one
// bucket at a time (memory: a bucket's rows). This is pg_comparator's
// scheme — rows grouped by key hash, descending only into groups whose
// checksums differ — with the whole first level folded by the database in
// one GROUP BY: it needs no index, no common key order between the two
// databases (collations, SQLite's text-stored DECIMAL and TIMESTAMP), and
// moves little more than the differing rows. Each side reads one snapshot
// (PostgreSQL REPEATABLE READ, a SQLite read transaction); the two sides
// are read at the same time, not at one instant, so changes committed
// meanwhile, like those pending in the stream (DiffResult.Pending, read
// first), may show as differences.
//
// Refused, wrapping ErrNoDiff: modes other than merge and history (an
// append-style target holds changes, not rows), SQL MERGE INTO jobs (their
// clauses decide what the target holds), a filter that reads
// __commit_version or __commit_timestamp or a key computed from them,
// backends that are not Differs, a missing target, and across SQLite and
// PostgreSQL a key of a type whose text the two write differently
// (FLOAT, DOUBLE, JSON, native types).
func (r *Runner) Diff(ctx context.Context, prep *Prepared, opt DiffOptions) (res *DiffResult, err error) {
	p := prep.Plan
	res = &DiffResult{Job: p.Job.Name, Source: p.Source.Table, Target: p.Sink.Table, Mode: p.Sink.Mode, Start: time.Now().UTC()}
	defer func() {
		res.End = time.Now().UTC()
		if err != nil {
			err = &RunError{Job: res.Job, Err: err}
		}
	}()
	bits := opt.Bits
	if bits == 0 {
		bits = DefaultDiffBits
	}
	if bits < 1 || bits > 24 {
		return res, fmt.Errorf("diff: bits must be 1 to 24, not %d", bits)
	}
	src, tgt, err := r.diffRelations(ctx, prep, res)
	if err != nil {
		return res, err
	}
	sd, ok := prep.source.(Differ)
	if !ok {
		return res, fmt.Errorf("%w: a %s source cannot read its table for a diff", ErrNoDiff, prep.source.Scheme())
	}
	td, ok := prep.sink.(Differ)
	if !ok {
		return res, fmt.Errorf("%w: a %s target cannot be read for a diff", ErrNoDiff, prep.sink.Scheme())
	}
	if sd.Scheme() != td.Scheme() {
		for i := range src.Keys {
			for _, t := range []cdc.Type{src.Columns[i].Type, tgt.Columns[i].Type} {
				if !rowhash.KeyComparable(t) {
					return res, fmt.Errorf("%w: key column %s is %s, whose values %s and %s write as different text; keys of that type cannot be matched across the two", ErrNoDiff, src.Columns[i].Name, t, sd.Scheme(), td.Scheme())
				}
			}
		}
	}
	if n := sd.DiffNative(); n != "" && n == td.DiffNative() {
		src.Native, tgt.Native = true, true
		for i := range src.Keys {
			if rowhash.Class(src.Columns[i].Type) != rowhash.Class(tgt.Columns[i].Type) {
				src.Native, tgt.Native = false, false
			}
		}
	}
	if res.Pending, err = r.diffPending(ctx, prep); err != nil {
		return res, err
	}
	sr, err := sd.DiffRead(ctx)
	if err != nil {
		return res, err
	}
	defer sr.Close()
	tr, err := td.DiffRead(ctx)
	if err != nil {
		return res, err
	}
	defer tr.Close()

	// First level: every bucket's count and sums, both sides at once.
	var sb, tb []BucketSum
	err = both(ctx,
		func(ctx context.Context) error {
			return sr.Buckets(ctx, src, bits, func(b BucketSum) error { sb = append(sb, b); return nil })
		},
		func(ctx context.Context) error {
			return tr.Buckets(ctx, tgt, bits, func(b BucketSum) error { tb = append(tb, b); return nil })
		})
	if err != nil {
		return res, err
	}
	differ := differingBuckets(sb, tb, res)
	r.log().Debug("diff buckets", "job", res.Job, "buckets", res.Buckets, "differ", len(differ), "source_rows", res.SourceRows, "target_rows", res.TargetRows)
	if len(differ) == 0 {
		return res, nil
	}
	fetch := differ
	if len(differ)*2 > res.Buckets {
		fetch = nil // most buckets: scanning without the bucket test is cheaper
	}
	return res, r.diffRows(ctx, sr, tr, src, tgt, bits, fetch, res, opt.Limit)
}

// both runs f and g at once and returns the first error; when one fails
// the other's context is cancelled.
func both(ctx context.Context, f, g func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- g(ctx) }()
	ef := f(ctx)
	if ef != nil {
		cancel()
	}
	eg := <-errc
	if ef != nil {
		return ef
	}
	return eg
}

// differingBuckets merges the two sides' bucket lists (ascending) and
// returns the buckets whose count or sums differ; it counts rows and
// buckets into res.
func differingBuckets(sb, tb []BucketSum, res *DiffResult) []uint32 {
	var out []uint32
	i, j := 0, 0
	for i < len(sb) || j < len(tb) {
		res.Buckets++
		switch {
		case j == len(tb) || i < len(sb) && sb[i].Bucket < tb[j].Bucket:
			res.SourceRows += sb[i].Count
			out = append(out, sb[i].Bucket)
			i++
		case i == len(sb) || tb[j].Bucket < sb[i].Bucket:
			res.TargetRows += tb[j].Count
			out = append(out, tb[j].Bucket)
			j++
		default:
			res.SourceRows += sb[i].Count
			res.TargetRows += tb[j].Count
			if sb[i] != tb[j] {
				out = append(out, sb[i].Bucket)
			}
			i++
			j++
		}
	}
	res.BucketsDiffer = len(out)
	return out
}

// bucketRows is one bucket's rows from one side.
type bucketRows struct {
	bucket uint32
	rows   [][]*string
}

// streamBuckets runs rd.Rows in a goroutine and sends its rows grouped by
// bucket on the returned channel (closed at the end); the error, if any,
// arrives on errc.
func streamBuckets(ctx context.Context, rd DiffReader, rel *DiffRelation, bits int, buckets []uint32) (<-chan bucketRows, <-chan error) {
	out := make(chan bucketRows, 1)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		var cur bucketRows
		started := false
		send := func() error {
			select {
			case out <- cur:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := rd.Rows(ctx, rel, bits, buckets, func(b uint32, cols []*string) error {
			if started && b != cur.bucket {
				if err := send(); err != nil {
					return err
				}
				cur = bucketRows{}
			}
			started = true
			cur.bucket = b
			cur.rows = append(cur.rows, cols)
			return nil
		})
		if err == nil && started {
			err = send()
		}
		errc <- err
	}()
	return out, errc
}

// diffRows reads the rows of the differing buckets from both sides and
// matches them by key, one bucket at a time.
func (r *Runner) diffRows(ctx context.Context, sr, tr DiffReader, src, tgt *DiffRelation, bits int, buckets []uint32, res *DiffResult, limit int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sc, serr := streamBuckets(ctx, sr, src, bits, buckets)
	tc, terr := streamBuckets(ctx, tr, tgt, bits, buckets)
	cmp := &rowMatcher{src: src, res: res, limit: limit}
	s, sok := <-sc
	t, tok := <-tc
	for sok || tok {
		switch {
		case !tok || sok && s.bucket < t.bucket:
			cmp.bucket(s.rows, nil)
			s, sok = <-sc
		case !sok || t.bucket < s.bucket:
			cmp.bucket(nil, t.rows)
			t, tok = <-tc
		default:
			cmp.bucket(s.rows, t.rows)
			s, sok = <-sc
			t, tok = <-tc
		}
	}
	if err := errors.Join(<-serr, <-terr); err != nil {
		return err
	}
	slices.SortFunc(res.Examples, compareExamples)
	return nil
}

// compareExamples orders examples by kind, then key (NULL first, then
// by text).
func compareExamples(a, b DiffExample) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return slices.CompareFunc(a.Key, b.Key, func(x, y *string) int {
		if x == nil || y == nil {
			return cmpBool(x != nil, y != nil)
		}
		return strings.Compare(*x, *y)
	})
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// rowMatcher matches one bucket's rows of both sides by key.
type rowMatcher struct {
	src   *DiffRelation
	res   *DiffResult
	limit int
}

// canon re-reads a canonical text from a database through rowcmp (so that
// texts the two databases write differently for equal values, such as a
// float's, compare equal); nil is NULL.
func canon(s *string, t cdc.Type) string {
	if s == nil {
		return rowcmp.Null
	}
	var v any = *s
	if t.Kind == cdc.KindBinary && strings.HasPrefix(*s, "0x") {
		// The databases write BINARY as rowhash's "0x…" text: read its
		// bytes, or Canon would take the text itself for the value.
		if b, err := hex.DecodeString((*s)[2:]); err == nil {
			v = b
		}
	}
	c, err := rowcmp.Canon(v, rowhash.CanonType(t))
	if err != nil {
		return "=" + *s
	}
	return c
}

func (m *rowMatcher) key(row []*string) (string, []*string) {
	var b strings.Builder
	vals := make([]*string, m.src.Keys)
	for i := 0; i < m.src.Keys; i++ {
		c := canon(row[i], m.src.Columns[i].Type)
		b.WriteString(strconv.Itoa(len(c)))
		b.WriteByte(':')
		b.WriteString(c)
		vals[i] = show(c)
	}
	return b.String(), vals
}

// example keeps e if it is among the first limit examples in
// compareExamples order (so the examples do not depend on the buckets'
// order).
func (m *rowMatcher) example(e DiffExample) {
	if m.limit <= 0 {
		return
	}
	if len(m.res.Examples) < m.limit {
		m.res.Examples = append(m.res.Examples, e)
		return
	}
	last := 0
	for i := range m.res.Examples {
		if compareExamples(m.res.Examples[i], m.res.Examples[last]) > 0 {
			last = i
		}
	}
	if compareExamples(e, m.res.Examples[last]) < 0 {
		m.res.Examples[last] = e
	}
}

func (m *rowMatcher) bucket(srows, trows [][]*string) {
	bySrc := make(map[string][][]*string, len(srows))
	for _, row := range srows {
		k, _ := m.key(row)
		bySrc[k] = append(bySrc[k], row)
	}
	for _, trow := range trows {
		k, vals := m.key(trow)
		rows := bySrc[k]
		if len(rows) == 0 {
			m.res.Extra++
			m.example(DiffExample{Kind: "extra", Key: vals})
			continue
		}
		srow := rows[0]
		if len(rows) == 1 {
			delete(bySrc, k)
		} else {
			bySrc[k] = rows[1:]
		}
		var cols []DiffValue
		for i := m.src.Keys; i < len(m.src.Columns); i++ {
			t := m.src.Columns[i].Type
			a, b := canon(srow[i], t), canon(trow[i], t)
			if a != b {
				cols = append(cols, DiffValue{Column: m.src.Columns[i].Name, Source: show(a), Target: show(b)})
			}
		}
		if len(cols) > 0 {
			m.res.Different++
			m.example(DiffExample{Kind: "different", Key: vals, Columns: cols})
		}
	}
	for _, rows := range bySrc {
		for _, row := range rows {
			_, vals := m.key(row)
			m.res.Missing++
			m.example(DiffExample{Kind: "missing", Key: vals})
		}
	}
}

// diffRelations builds the two sides of prep's diff, or refuses the job.
func (r *Runner) diffRelations(ctx context.Context, prep *Prepared, res *DiffResult) (src, tgt *DiffRelation, err error) {
	p := prep.Plan
	st := p.Sink
	switch {
	case st.Backend == "stdout":
		return nil, nil, fmt.Errorf("%w: a stdout sink keeps no target to compare", ErrNoDiff)
	case st.Merge != nil:
		return nil, nil, fmt.Errorf("%w: a SQL MERGE INTO job's own clauses decide what its target holds, so it need not equal the source", ErrNoDiff)
	case st.Mode != plan.ModeMerge && st.Mode != plan.ModeHistory:
		return nil, nil, fmt.Errorf("%w: mode %s writes one target row per change, not the source's rows; only merge and history targets can equal their source", ErrNoDiff, st.Mode)
	}
	target, exists, err := prep.sink.Target(ctx, st.Table)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		return nil, nil, fmt.Errorf("%w: target %s does not exist (run the job first)", ErrNoDiff, st.Table)
	}
	nmeta := len(cdc.MetadataColumns)
	readsMeta := func(b *expr.Bound, from int) bool {
		return slices.ContainsFunc(b.Columns(), func(c expr.ColumnRef) bool { return c.Col >= from && c.Col < nmeta })
	}
	table := prep.stream.TableSchema
	col := func(changeType string) func(rel, idx int) string {
		return func(_, idx int) string {
			if idx < nmeta {
				return expr.QuoteString(changeType) // only __change_type reaches here
			}
			return expr.QuoteIdent(table.Columns[idx-nmeta].Name)
		}
	}
	src = &DiffRelation{Table: p.Source.Table}
	tgt = &DiffRelation{Table: st.Table}
	if p.Filter != nil {
		if readsMeta(p.Filter.Expr, 1) {
			return nil, nil, fmt.Errorf("%w: the filter reads __commit_version or __commit_timestamp, which the table's rows do not have", ErrNoDiff)
		}
		src.Where = []DiffPred{{Expr: p.Filter.Expr, Col: col("INSERT")}}
		if readsMeta(p.Filter.Expr, 0) {
			src.Where = append(src.Where, DiffPred{Expr: p.Filter.Expr, Col: col("UPDATE_AFTER")})
		}
	}
	switch {
	case st.Mode == plan.ModeHistory:
		tgt.Null = []string{plan.ColValidTo}
	case st.OnDelete == plan.OnDeleteSoft:
		tgt.Null = []string{plan.ColDeletedAt}
	case st.OnDelete == plan.OnDeleteIgnore:
		res.ExtraExpected = true
	}
	add := func(i int, isKey bool) error {
		name := st.Schema.Columns[i].Name
		it := p.Project[i]
		if readsMeta(it.Expr, 0) {
			if isKey {
				return fmt.Errorf("%w: key column %s is computed from the stream's metadata, which the table's rows do not have", ErrNoDiff, name)
			}
			res.Skipped = append(res.Skipped, name)
			return nil
		}
		tc, ok := target.Column(name)
		if !ok {
			return fmt.Errorf("%w: target %s has no column %s", ErrNoDiff, st.Table, name)
		}
		src.Columns = append(src.Columns, DiffColumn{Name: name, Type: it.Type, Expr: it.Expr, Col: col("INSERT")})
		tgt.Columns = append(tgt.Columns, DiffColumn{Name: tc.Name, Type: tc.Type})
		res.Columns = append(res.Columns, name)
		if isKey {
			res.Keys = append(res.Keys, name)
		}
		return nil
	}
	for _, k := range st.Keys {
		i := st.Schema.Index(k)
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: key %s is not projected", ErrNoDiff, k)
		}
		if err := add(i, true); err != nil {
			return nil, nil, err
		}
	}
	for i := range st.Schema.Columns {
		if st.IsKey(st.Schema.Columns[i].Name) {
			continue
		}
		if err := add(i, false); err != nil {
			return nil, nil, err
		}
	}
	src.Keys, tgt.Keys = len(res.Keys), len(res.Keys)
	return src, tgt, nil
}

// diffPending reads the job's position (its checkpoint in the target
// database, else the stream's offset) and counts the changes pending after
// it, without consuming them.
func (r *Runner) diffPending(ctx context.Context, prep *Prepared) (DiffPending, error) {
	pd := DiffPending{Changes: map[cdc.Op]int64{}}
	info, err := prep.source.Stream(ctx, prep.Plan.Job.Source)
	if err != nil {
		return pd, err
	}
	from := info.Offset
	st := prep.Plan.Sink
	st.Mode = plan.ModeAppend // never fails on an existing target; rolled back
	sp, err := prep.sink.PrepareSink(ctx, &st)
	if err != nil {
		return pd, err
	}
	tx, err := sp.Begin(ctx, prep.Plan.Job.Name)
	if err != nil {
		return pd, err
	}
	cp, ok, err := tx.Checkpoint(ctx)
	_ = tx.Rollback(ctx)
	if err != nil {
		return pd, err
	}
	if ok && cp.StreamID == info.ID {
		if _, busy := cp.Offset.Get(BackfillPartition); !busy {
			from = cp.Offset
		}
	}
	pd.Offset = from
	rd, err := prep.source.Changes(ctx, info, from, ReadOptions{BatchSize: r.batchSize()})
	if err != nil {
		return pd, err
	}
	defer rd.Close()
	for {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return pd, err
		}
		for _, ch := range batch {
			pd.Changes[ch.Op]++
			pd.Total++
			if pd.Oldest.IsZero() || ch.CommitTime.Before(pd.Oldest) {
				pd.Oldest = ch.CommitTime
			}
		}
	}
	if !pd.Oldest.IsZero() {
		pd.Lag = time.Since(pd.Oldest)
	}
	return pd, nil
}
