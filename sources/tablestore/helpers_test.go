package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// t0 is the start of the manual clocks.
var t0 = time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)

const table = "orders"

// declared are the attribute columns the tests' jobs declare.
var declared = []plan.ColumnDecl{
	{Name: "name", Type: "STRING"},
	{Name: "qty", Type: "BIGINT"},
	{Name: "price", Type: "DECIMAL(10,2)"},
	{Name: "paid", Type: "BOOLEAN"},
	{Name: "score", Type: "DOUBLE"},
}

// cols is the expected row layout: key id, then the declared columns.
var cols = []string{"id", "name", "qty", "price", "paid", "score"}

// world is a fake server with one table, an SDK client writing to it, and
// the model of every write made (the expected changes, computed here and
// not by the code under test).
type world struct {
	t     testing.TB
	srv   *otsfake.Server
	clk   *otsfake.ManualClock
	c     *tablestore.TableStoreClient
	table string
	ops   []op
}

// op is one write and the change a reader must return for it.
type op struct {
	kind  cdc.Op
	id    int64
	put   map[string]any // PutRow cells / UpdateRow puts
	del   []string       // UpdateRow deleted columns
	shard string         // the shard the write went to
	at    time.Time      // server clock at the write
}

func newWorld(t testing.TB, shards int) *world {
	t.Helper()
	clk := otsfake.NewManualClock(t0)
	srv := otsfake.New(otsfake.WithClock(clk.Now), otsfake.WithShards(shards))
	t.Cleanup(srv.Close)
	w := &world{t: t, srv: srv, clk: clk, c: sdkClient(srv), table: table}
	w.createTable(table, true)
	return w
}

// sdkClient is a plain SDK client for the test's own writes.
func sdkClient(srv *otsfake.Server) *tablestore.TableStoreClient {
	cfg := tablestore.NewDefaultTableStoreConfig()
	cfg.RetryTimes = 2
	cfg.DefaultRetryInterval = time.Millisecond
	cfg.MaxRetryInterval = 2 * time.Millisecond
	return tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", cfg)
}

func (w *world) createTable(name string, stream bool) {
	w.t.Helper()
	meta := &tablestore.TableMeta{TableName: name}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	req := &tablestore.CreateTableRequest{TableMeta: meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
		ReservedThroughput: &tablestore.ReservedThroughput{}}
	if stream {
		req.StreamSpec = &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24}
	}
	if _, err := w.c.CreateTable(req); err != nil {
		w.t.Fatalf("CreateTable: %v", err)
	}
}

// sourceURL is the connection URL of srv.
func sourceURL(srv *otsfake.Server) string {
	return "tablestore+http://" + strings.TrimPrefix(srv.URL(), "http://") + "?instance=" + srv.Instance()
}

// open opens a Source on w's server with fast retries and w's clock.
func (w *world) open(opts ...Option) *Source {
	w.t.Helper()
	base := []Option{
		WithCredentials(w.srv.AccessKeyID(), w.srv.AccessKeySecret(), ""),
		WithRetry(RetryPolicy{Attempts: 5, Initial: time.Millisecond, Max: 4 * time.Millisecond}),
		WithClock(w.clk.Now),
	}
	s, err := Open(context.Background(), sourceURL(w.srv), slog.New(slog.DiscardHandler), append(base, opts...)...)
	if err != nil {
		w.t.Fatalf("Open: %v", err)
	}
	w.t.Cleanup(func() { _ = s.Close() })
	return s
}

func pkOf(id int64) *tablestore.PrimaryKey {
	pk := &tablestore.PrimaryKey{}
	pk.AddPrimaryKeyColumn("id", id)
	return pk
}

func (w *world) shardOf(id int64) string {
	sh, err := w.srv.ShardFor(w.table, id)
	if err != nil {
		w.t.Fatalf("ShardFor: %v", err)
	}
	return sh
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *world) putChange(id int64, cells map[string]any) *tablestore.PutRowChange {
	ch := &tablestore.PutRowChange{TableName: w.table, PrimaryKey: pkOf(id)}
	for _, n := range sortedNames(cells) {
		ch.AddColumn(n, cells[n])
	}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	return ch
}

func (w *world) updateChange(id int64, puts map[string]any, dels []string) *tablestore.UpdateRowChange {
	ch := &tablestore.UpdateRowChange{TableName: w.table, PrimaryKey: pkOf(id)}
	for _, n := range sortedNames(puts) {
		ch.PutColumn(n, puts[n])
	}
	for _, n := range dels {
		ch.DeleteColumn(n)
	}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	return ch
}

func (w *world) record(o op) { o.shard, o.at = w.shardOf(o.id), w.clk.Now(); w.ops = append(w.ops, o) }

func (w *world) put(id int64, cells map[string]any) {
	w.t.Helper()
	w.record(op{kind: cdc.OpInsert, id: id, put: cells})
	if _, err := w.c.PutRow(&tablestore.PutRowRequest{PutRowChange: w.putChange(id, cells)}); err != nil {
		w.t.Fatalf("PutRow: %v", err)
	}
}

func (w *world) update(id int64, puts map[string]any, dels ...string) {
	w.t.Helper()
	w.record(op{kind: cdc.OpUpdateAfter, id: id, put: puts, del: dels})
	if _, err := w.c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: w.updateChange(id, puts, dels)}); err != nil {
		w.t.Fatalf("UpdateRow: %v", err)
	}
}

func (w *world) delete(id int64) {
	w.t.Helper()
	w.record(op{kind: cdc.OpDelete, id: id})
	ch := &tablestore.DeleteRowChange{TableName: w.table, PrimaryKey: pkOf(id)}
	ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
	if _, err := w.c.DeleteRow(&tablestore.DeleteRowRequest{DeleteRowChange: ch}); err != nil {
		w.t.Fatalf("DeleteRow: %v", err)
	}
}

// batch writes ops (distinct keys) with one BatchWriteRow.
func (w *world) batch(ops []op) {
	w.t.Helper()
	req := &tablestore.BatchWriteRowRequest{}
	for _, o := range ops {
		switch o.kind {
		case cdc.OpInsert:
			req.AddRowChange(w.putChange(o.id, o.put))
		case cdc.OpUpdateAfter:
			req.AddRowChange(w.updateChange(o.id, o.put, o.del))
		case cdc.OpDelete:
			ch := &tablestore.DeleteRowChange{TableName: w.table, PrimaryKey: pkOf(o.id)}
			ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
			req.AddRowChange(ch)
		}
		w.record(o)
	}
	resp, err := w.c.BatchWriteRow(req)
	if err != nil {
		w.t.Fatalf("BatchWriteRow: %v", err)
	}
	for _, r := range resp.TableToRowsResult[w.table] {
		if !r.IsSucceed {
			w.t.Fatalf("BatchWriteRow row %d: %+v", r.Index, r.Error)
		}
	}
}

// info returns the StreamInfo of the test table through s.
func (w *world) info(s *Source) *runner.StreamInfo {
	w.t.Helper()
	info, err := s.Stream(context.Background(), plan.Source{Stream: w.table, Columns: declared})
	if err != nil {
		w.t.Fatalf("Stream: %v", err)
	}
	return info
}

// readAll reads a whole read from from and returns its changes and read
// point.
func readAll(t testing.TB, s *Source, info *runner.StreamInfo, from cdc.Offset, batch int) ([]cdc.Change, cdc.Offset) {
	t.Helper()
	ctx := context.Background()
	rd, err := s.Changes(ctx, info, from, runner.ReadOptions{BatchSize: batch})
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	defer rd.Close()
	var out []cdc.Change
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, rd.ReadPoint()
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(b) == 0 || len(b) > batch {
			t.Fatalf("Next returned %d changes, batch size %d", len(b), batch)
		}
		out = append(out, b...)
	}
}

// expected returns the change op must produce: values as the canonical
// Go values of the declared types, computed from the written values.
func expected(o op) cdc.Change {
	row := make([]any, len(cols))
	row[0] = o.id
	var present []bool
	switch o.kind {
	case cdc.OpUpdateAfter:
		present = make([]bool, len(cols))
		present[0] = true
	case cdc.OpDelete:
		present = make([]bool, len(cols))
		present[0] = true
	}
	for name, v := range o.put {
		i := slices.Index(cols, name)
		if i < 0 {
			continue // undeclared: ignored
		}
		if name == "price" {
			v = mustDecimal(v.(string))
		}
		row[i] = v
		if present != nil {
			present[i] = true
		}
	}
	for _, name := range o.del {
		if i := slices.Index(cols, name); i >= 0 {
			row[i], present[i] = nil, true
		}
	}
	return cdc.Change{Op: o.kind, CommitTime: o.at.UTC().Truncate(time.Microsecond), Row: row, Present: present}
}

// render is a change as comparable text (no version).
func render(c cdc.Change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s[", c.Op, c.CommitTime.Format(time.RFC3339Nano))
	for i, v := range c.Row {
		if i > 0 {
			b.WriteString(" ")
		}
		if !c.Has(i) {
			b.WriteString("-")
			continue
		}
		fmt.Fprintf(&b, "%s=%s:%T", cols[i], cdc.FormatValue(v, cdc.Type{}), v)
	}
	if c.Present == nil {
		b.WriteString(" full")
	}
	b.WriteString("]")
	return b.String()
}

// byKey groups rendered changes by key in the order given.
func byKey(chs []cdc.Change) map[int64][]string {
	m := map[int64][]string{}
	for _, c := range chs {
		id := c.Row[0].(int64)
		m[id] = append(m[id], render(c))
	}
	return m
}

// checkExactlyOnce asserts that got holds exactly the expected change of
// every write in w.ops, each once, in write order per key, with commit
// versions strictly increasing per key.
func checkExactlyOnce(t *testing.T, w *world, got []cdc.Change) {
	t.Helper()
	want := make([]cdc.Change, len(w.ops))
	for i, o := range w.ops {
		want[i] = expected(o)
	}
	if len(got) != len(want) {
		t.Errorf("got %d changes, want %d", len(got), len(want))
	}
	gk, wk := byKey(got), byKey(want)
	for id, ws := range wk {
		if !slices.Equal(gk[id], ws) {
			t.Errorf("key %d:\n got %q\nwant %q", id, gk[id], ws)
		}
	}
	for id := range gk {
		if _, ok := wk[id]; !ok {
			t.Errorf("key %d: unexpected changes %q", id, gk[id])
		}
	}
	last := map[int64]int64{}
	for _, c := range got {
		id := c.Row[0].(int64)
		if v, ok := last[id]; ok && c.CommitVersion <= v {
			t.Errorf("key %d: commit version %d after %d", id, c.CommitVersion, v)
		}
		last[id] = c.CommitVersion
	}
}
