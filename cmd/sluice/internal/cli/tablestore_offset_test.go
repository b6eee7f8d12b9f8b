package cli_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/internal/otsfake"
)

// TestRunTablestoreOffsetReadable: `sluice run` of a Tablestore job prints
// its offsets in words — the shards and the commit time of the last record
// read, which the fake's clock fixes — not the shards' raw JSON positions.
func TestRunTablestoreOffsetReadable(t *testing.T) {
	clk := otsfake.NewManualClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	srv := otsfake.New(otsfake.WithClock(clk.Now), otsfake.WithShards(2))
	t.Cleanup(srv.Close)
	c := tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", nil)
	meta := &tablestore.TableMeta{TableName: "orders"}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	if _, err := c.CreateTable(&tablestore.CreateTableRequest{
		TableMeta:          meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
		ReservedThroughput: &tablestore.ReservedThroughput{},
		StreamSpec:         &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24},
	}); err != nil {
		t.Fatal(err)
	}
	put := func(id int64, at string) {
		t.Helper()
		tm, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		clk.Set(tm)
		ch := &tablestore.PutRowChange{TableName: "orders", PrimaryKey: &tablestore.PrimaryKey{}}
		ch.PrimaryKey.AddPrimaryKeyColumn("id", id)
		ch.AddColumn("customer", "c")
		ch.SetCondition(tablestore.RowExistenceExpectation_IGNORE)
		if _, err := c.PutRow(&tablestore.PutRowRequest{PutRowChange: ch}); err != nil {
			t.Fatalf("PutRow: %v", err)
		}
	}
	for i, at := range []string{"2026-12-01T10:00:01Z", "2026-12-01T10:00:02Z", "2026-12-01T10:00:03Z", "2026-12-01T10:00:03Z"} {
		put(int64(i+1), at)
	}
	t.Setenv("TABLESTORE_ACCESS_KEY_ID", srv.AccessKeyID())
	t.Setenv("TABLESTORE_ACCESS_KEY_SECRET", srv.AccessKeySecret())
	dir := t.TempDir()
	job := writeFile(t, dir, "ts.yaml", `name: ts_sync
connection: tablestore+http://`+strings.TrimPrefix(srv.URL(), "http://")+`?instance=`+srv.Instance()+`
source:
  stream: orders
  columns: {customer: STRING}
sink: {table: orders_copy, mode: merge, keys: [id], connection: "sqlite:`+filepath.Join(dir, "x.db")+`"}
`)
	// The shards the fake made, each with a position after the read.
	want := `2 shards, read to 2026-12-01 10:00:03Z`
	line := regexp.MustCompile(`^ts_sync: read 4 \(INSERT 4\); wrote 4 \(INSERT 4\); offset start -> ` + regexp.QuoteMeta(want) + ` at \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\n$`)
	if out := mustSluice(t, "run", job).stdout; !line.MatchString(out) {
		t.Errorf("sluice run printed\n%s\nwant a line matching %s", out, line)
	}
	clk.Set(time.Date(2026, 12, 1, 10, 0, 9, 0, time.UTC))
	put(5, "2026-12-01T10:00:09Z")
	line = regexp.MustCompile(`^ts_sync: read 1 \(INSERT 1\); wrote 1 \(INSERT 1\); offset ` + regexp.QuoteMeta(want) + ` -> 2 shards, read to 2026-12-01 10:00:09Z at .*\n$`)
	if out := mustSluice(t, "run", job).stdout; !line.MatchString(out) {
		t.Errorf("second sluice run printed\n%s\nwant a line matching %s", out, line)
	}
}

// TestShowStreamsOffsetReadable: SHOW TABLE STREAMS says each offset in
// words in a table ("change 3", "change 3, initial rows pending" for
// SQLite's raw "3" and "initial@3") and keeps the raw form in jsonl.
func TestShowStreamsOffsetReadable(t *testing.T) {
	d := seededDB(t)
	raw := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(mustSluice(t, "sql", "--conn", d.conn, "--format", "jsonl", "SHOW TABLE STREAMS").stdout), "\n") {
		m := regexp.MustCompile(`"name":"([^"]+)".*"offset":"([^"]*)"`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no name and offset in %s", line)
		}
		raw[m[1]] = m[2]
	}
	tb := parseTable(t, mustSluice(t, "sql", "--conn", d.conn, "SHOW TABLE STREAMS").stdout)
	seen := 0
	for _, row := range tb.rows {
		name, got := row[tb.col(t, "name")], row[tb.col(t, "offset")]
		r, ok := raw[name]
		if !ok {
			t.Fatalf("stream %s is in the table, not in jsonl", name)
		}
		want := "change " + r
		if n, found := strings.CutPrefix(r, "initial@"); found {
			want = "change " + n + ", initial rows pending"
		}
		if got != want {
			t.Errorf("stream %s: offset %q in the table, want %q (raw %q)", name, got, want, r)
		}
		seen++
	}
	if seen != 3 || len(raw) != 3 {
		t.Errorf("%d streams in the table, %d in jsonl; the walkthrough's setup has 3", seen, len(raw))
	}
}
