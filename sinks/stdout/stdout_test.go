package stdout

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// The seed's stream read (plus a NULL, a unicode name and a zone).
var streamCols = append(append([]cdc.Column(nil), cdc.MetadataColumns...),
	cdc.Column{Name: "id", Type: cdc.TypeInt},
	cdc.Column{Name: "name", Type: cdc.TypeString},
	cdc.Column{Name: "amount", Type: cdc.Decimal(10, 2)},
	cdc.Column{Name: "status", Type: cdc.TypeString},
)

func streamRows() [][]any {
	ts := func(s string) time.Time {
		t, err := cdc.ParseTimestamp(s)
		if err != nil {
			panic(err)
		}
		return t
	}
	d := decimal.RequireFromString
	return [][]any{
		{"UPDATE_AFTER", int64(5), ts("2024-01-15 10:00:01.25+00:00"), int64(1), "Alice", d("1500"), "active"},
		{"INSERT", int64(4), ts("2024-01-15 10:00:00+00:00"), int64(4), "Dave", d("3000"), "active"},
		{"UPDATE_BEFORE", int64(3), ts("2024-01-15 17:59:59+08:00"), int64(1), "Alice", d("1000"), "active"},
		{"DELETE", int64(3), ts("2024-01-15 09:59:59+00:00"), int64(3), "Carol", d("500"), nil},
		{"INSERT", int64(6), ts("2024-01-15 10:05:00+00:00"), int64(7), "王小明", d("0.5"), "line\nbreak"},
	}
}

func TestTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, streamCols, streamRows()); err != nil {
		t.Fatal(err)
	}
	golden(t, "stream.table", b.Bytes())
}

func TestTableEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, streamCols[3:5], nil); err != nil {
		t.Fatal(err)
	}
	want := "+---+----+\n| id|name|\n+---+----+\n+---+----+\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJSONLGolden(t *testing.T) {
	cols := append(append([]cdc.Column(nil), streamCols...),
		cdc.Column{Name: "big", Type: cdc.Decimal(38, 10)},
		cdc.Column{Name: "ok", Type: cdc.TypeBoolean},
		cdc.Column{Name: "day", Type: cdc.TypeDate},
		cdc.Column{Name: "raw", Type: cdc.TypeBinary},
		cdc.Column{Name: "f", Type: cdc.TypeDouble},
	)
	rows := streamRows()
	extra := [][]any{
		{decimal.RequireFromString("12345678901234567890.1234567891"), true, time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), []byte{0, 1, 0xff}, 0.1},
		{nil, false, nil, nil, nil},
	}
	for i := range rows {
		rows[i] = append(rows[i], extra[i%2]...)
	}
	var b bytes.Buffer
	if err := JSONL(&b, cols, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "stream.jsonl", b.Bytes())
}

func TestSinkPrintsAndConsumesNothing(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"stdout:", "stdout:jsonl"} {
		t.Run(url, func(t *testing.T) {
			be, err := runner.Open(ctx, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			be.(*Backend).SetOutput(&out)
			st := &plan.SinkStage{Backend: "stdout", Mode: plan.ModeAppend, Schema: cdc.Schema{Columns: streamCols[3:]}}
			sp, err := be.(runner.Sink).PrepareSink(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := sp.(interface{ Consumes() bool }); !ok || c.Consumes() {
				t.Error("stdout plan must report Consumes() == false")
			}
			tx, err := sp.Begin(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			var batch []cdc.Change
			for _, r := range streamRows() {
				op, _ := cdc.ParseOp(r[0].(string))
				batch = append(batch, cdc.Change{Op: op, CommitVersion: r[1].(int64), Row: r[3:]})
			}
			batch[0].Present = []bool{true, false, true, true} // partial: name not carried
			if err := tx.Write(ctx, batch); err != nil {
				t.Fatal(err)
			}
			stats, err := tx.Commit(ctx, runner.Checkpoint{Offset: cdc.SingleOffset("9")})
			if err != nil {
				t.Fatal(err)
			}
			if stats.Written[cdc.OpInsert] != 2 || stats.Written[cdc.OpDelete] != 1 {
				t.Errorf("written = %v", stats.Written)
			}
			if _, ok, _ := tx.Checkpoint(ctx); ok {
				t.Error("stdout stored a checkpoint")
			}
			name := "sink.table"
			if url == "stdout:jsonl" {
				name = "sink.jsonl"
			}
			golden(t, name, out.Bytes())
		})
	}
}

func TestOpenRejectsUnknownFormat(t *testing.T) {
	if _, err := runner.Open(context.Background(), "stdout:csv", nil); err == nil {
		t.Fatal("stdout:csv opened")
	}
}

func TestWidth(t *testing.T) {
	for s, want := range map[string]int{"abc": 3, "金额": 4, "王小明": 6, "é": 1, "": 0} {
		if got := width(s); got != want {
			t.Errorf("width(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestWidthGraphemes: combining marks take no column, emoji (also with a
// skin tone or as a ZWJ sequence) two, East Asian wide characters two.
func TestWidthGraphemes(t *testing.T) {
	for s, want := range map[string]int{
		"e\u0301":                    1, // e + combining acute
		"\U0001F600":                 2, // 😀
		"\U0001F44D\U0001F3FD":       2, // 👍🏽
		"\U0001F469\u200D\U0001F4BB": 2, // 👩‍💻
		"ｱ":                          1, // halfwidth katakana
		"Ａ":                          2, // fullwidth A
	} {
		if got := width(s); got != want {
			t.Errorf("width(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestCut: cells are cut between grapheme clusters to the display width
// asked, the last column being the ellipsis.
func TestCut(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"abcdef", 0, "abcdef"},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 5, "abcd…"},
		{"王小明王小明", 6, "王小…"},                     // 王小 is 4 columns, 王 would make 7
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"}, // never splits a mark from its letter
		{"\U0001F600\U0001F600", 3, "\U0001F600…"},
	} {
		got := cut(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if tt.max > 0 && width(got) > tt.max {
			t.Errorf("cut(%q, %d) is %d wide", tt.in, tt.max, width(got))
		}
	}
}

// TestCSV: RFC 4180 quoting; NULL empty and unquoted, empty text quoted.
func TestCSV(t *testing.T) {
	cols := []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "note", Type: cdc.TypeString}}
	rows := [][]any{{int64(1), "plain"}, {int64(2), `say "hi", twice`}, {int64(3), nil}, {int64(4), ""}, {int64(5), "two\nlines"}, {int64(6), " padded"}}
	var b strings.Builder
	if err := CSV(&b, cols, rows); err != nil {
		t.Fatal(err)
	}
	want := "id,note\n1,plain\n2,\"say \"\"hi\"\", twice\"\n3,\n4,\"\"\n5,\"two\nlines\"\n6,\" padded\"\n"
	if b.String() != want {
		t.Errorf("CSV =\n%s\nwant\n%s", b.String(), want)
	}
	// encoding/csv reads it back to the same fields (NULL and "" both
	// read as empty there).
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 || recs[2][1] != `say "hi", twice` || recs[5][1] != "two\nlines" || recs[6][1] != " padded" {
		t.Errorf("read back %q", recs)
	}
}
