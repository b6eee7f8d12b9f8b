package tablestore_test

// End to end: a Tablestore stream (fake server, real SDK) consumed by the
// runner into a SQLite merge sink. The expected target is computed from the
// writes made here.

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"
	_ "modernc.org/sqlite"

	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/sqlite"
	_ "github.com/sluicedata/sluice/sources/tablestore"
)

// model is the table's contents as the writes define them.
type model map[int64]map[string]any

func (m model) put(id int64, cols map[string]any) { m[id] = cloneMap(cols) }
func (m model) update(id int64, cols map[string]any, del ...string) {
	r := m[id]
	if r == nil { // UpdateRow creates a missing row
		r = map[string]any{}
		m[id] = r
	}
	for k, v := range cols {
		r[k] = v
	}
	for _, k := range del {
		delete(r, k)
	}
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// rows renders the model as the SQLite target stores it (DECIMAL(10,2) as
// fixed-scale text, BOOLEAN as 0/1).
func (m model) rows() []string {
	var out []string
	for id, r := range m {
		cell := func(k string) string {
			v, ok := r[k]
			if !ok {
				return "NULL"
			}
			if b, isB := v.(bool); isB {
				if b {
					return "1"
				}
				return "0"
			}
			return fmt.Sprint(v)
		}
		out = append(out, fmt.Sprintf("%d|%s|%s|%s|%s", id, cell("name"), cell("qty"), cell("price"), cell("paid")))
	}
	slices.Sort(out)
	return out
}

func TestEndToEndSQLiteMerge(t *testing.T) {
	clk := otsfake.NewManualClock(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	srv := otsfake.New(otsfake.WithClock(clk.Now), otsfake.WithShards(2))
	defer srv.Close()
	t.Setenv("TABLESTORE_ACCESS_KEY_ID", srv.AccessKeyID())
	t.Setenv("TABLESTORE_ACCESS_KEY_SECRET", srv.AccessKeySecret())
	c := tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", nil)
	meta := &tablestore.TableMeta{TableName: "orders"}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	if _, err := c.CreateTable(&tablestore.CreateTableRequest{TableMeta: meta,
		TableOption: &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1}, ReservedThroughput: &tablestore.ReservedThroughput{},
		StreamSpec: &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24}}); err != nil {
		t.Fatal(err)
	}
	m := model{}
	pk := func(id int64) *tablestore.PrimaryKey {
		p := &tablestore.PrimaryKey{}
		p.AddPrimaryKeyColumn("id", id)
		return p
	}
	put := func(id int64, cols map[string]any) {
		ch := &tablestore.PutRowChange{TableName: "orders", PrimaryKey: pk(id)}
		for _, k := range []string{"name", "qty", "price", "paid"} {
			if v, ok := cols[k]; ok {
				ch.AddColumn(k, v)
			}
		}
		ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
		if _, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch}); err != nil {
			t.Fatal(err)
		}
		m.put(id, cols)
	}
	update := func(id int64, cols map[string]any, del ...string) {
		ch := &tablestore.UpdateRowChange{TableName: "orders", PrimaryKey: pk(id)}
		for _, k := range []string{"name", "qty", "price", "paid"} {
			if v, ok := cols[k]; ok {
				ch.PutColumn(k, v)
			}
		}
		for _, k := range del {
			ch.DeleteColumn(k)
		}
		ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
		if _, err := c.UpdateRow(&tablestore.UpdateRowRequest{UpdateRowChange: ch}); err != nil {
			t.Fatal(err)
		}
		m.update(id, cols, del...)
	}
	del := func(id int64) {
		ch := &tablestore.DeleteRowChange{TableName: "orders", PrimaryKey: pk(id)}
		ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
		if _, err := c.DeleteRow(&tablestore.DeleteRowRequest{DeleteRowChange: ch}); err != nil {
			t.Fatal(err)
		}
		delete(m, id)
	}

	target := filepath.Join(t.TempDir(), "target.db")
	job := &plan.Job{
		Name:   "orders_sync",
		Format: "yaml",
		Conn:   "tablestore+http://" + strings.TrimPrefix(srv.URL(), "http://") + "?instance=" + srv.Instance(),
		Source: plan.Source{Stream: "orders", Columns: []plan.ColumnDecl{
			{Name: "name", Type: "STRING"}, {Name: "qty", Type: "BIGINT"}, {Name: "price", Type: "DECIMAL(10,2)"}, {Name: "paid", Type: "BOOLEAN"}}},
		Sink: plan.Sink{Table: "orders_copy", Mode: plan.ModeMerge, Keys: []string{"id"}, Conn: "sqlite:" + target},
	}
	run := func(wantRead int64) {
		t.Helper()
		r := &runner.Runner{Log: slog.New(slog.DiscardHandler), BatchSize: 7}
		defer r.Close()
		res, err := r.RunJob(context.Background(), job)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		var n int64
		for _, v := range res.Stats.Read {
			n += v
		}
		if n != wantRead {
			t.Errorf("run read %d changes, want %d (%v)", n, wantRead, res.Stats.Read)
		}
		db, err := sql.Open("sqlite", target)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rs, err := db.Query(`SELECT id, name, qty, price, paid FROM orders_copy`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var got []string
		for rs.Next() {
			var id int64
			var name, qty, price, paid sql.NullString
			if err := rs.Scan(&id, &name, &qty, &price, &paid); err != nil {
				t.Fatal(err)
			}
			s := func(v sql.NullString) string {
				if !v.Valid {
					return "NULL"
				}
				return v.String
			}
			got = append(got, fmt.Sprintf("%d|%s|%s|%s|%s", id, s(name), s(qty), s(price), s(paid)))
		}
		slices.Sort(got)
		if want := m.rows(); !slices.Equal(got, want) {
			t.Errorf("target:\n got %q\nwant %q", got, want)
		}
	}

	for i := int64(1); i <= 20; i++ {
		put(i, map[string]any{"name": fmt.Sprintf("c%d", i), "qty": i, "price": fmt.Sprintf("%d.50", i), "paid": false})
	}
	update(3, map[string]any{"paid": true})
	update(4, map[string]any{"qty": int64(40)}, "name")
	del(5)
	run(23)
	run(0) // nothing new

	clk.Advance(time.Second)
	put(3, map[string]any{"name": "replaced"}) // a PutRow replaces the whole row
	update(6, map[string]any{"price": "99.99"})
	if _, _, err := srv.SplitShard("orders", "shard-0001"); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 20; i++ {
		update(i, map[string]any{"qty": i * 100})
	}
	del(7)
	update(21, map[string]any{"name": "created by update"})
	run(24)
}
