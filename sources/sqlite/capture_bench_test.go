package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// BenchmarkCaptureOverhead measures what change capture costs the
// application: single-row INSERT, UPDATE and DELETE statements from an
// application connection (database/sql, WAL with synchronous = NORMAL,
// recursive_triggers off, 100 statements per transaction), each statement
// either prepared anew ("plain": what tx.Exec does, so SQLite also
// compiles the triggers each time) or prepared once per transaction
// ("prepared"), on an untracked table, on the capture of the
// previous sluice (v1: AFTER triggers naming every column; it lost
// REPLACE deletes and refused DROP COLUMN) and on the current capture
// (v2). The contenders alternate within each of b.N rounds (rotating who
// goes first); it reports the median µs per statement of each and the
// ratio to untracked (median, min–max over rounds). Every round checks
// that the three tables end equal in every column, and that v2's STANDARD
// stream returns exactly the table's rows as inserts.
//
//	go test ./sources/sqlite/ -run '^$' -bench CaptureOverhead -benchtime 7x
func BenchmarkCaptureOverhead(b *testing.B) {
	const rows = 2000
	ctx := b.Context()
	contenders := []string{"untracked", "v1", "v2"}
	var phases []string
	for _, m := range []string{"plain", "prepared"} {
		for _, p := range []string{"insert", "update", "delete"} {
			phases = append(phases, m+"-"+p)
		}
	}
	us := map[string][]float64{} // contender/phase → µs per statement, per round
	for round := 0; round < b.N; round++ {
		states := map[string]string{}
		for i := range contenders {
			c := contenders[(i+round)%len(contenders)]
			path := filepath.Join(b.TempDir(), c+".db")
			bk, err := sqlite.Open(ctx, "sqlite:"+path, nil)
			if err != nil {
				b.Fatal(err)
			}
			f := &fixture{b: bk}
			db := bk.DB()
			if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT, qty INTEGER, price NUMERIC, note TEXT, updated TEXT)`); err != nil {
				b.Fatal(err)
			}
			switch c {
			case "v1":
				for _, s := range v1Capture("items", []string{"id", "sku", "name", "qty", "price", "note", "updated"}, "id") {
					if _, err := db.ExecContext(ctx, s); err != nil {
						b.Fatal(err)
					}
				}
			case "v2":
				for _, s := range []string{`ALTER TABLE items SET PROPERTIES ('change_tracking' = 'true')`, `CREATE TABLE STREAM s ON TABLE items`} {
					if _, err := f.b.Exec(ctx, mustParse(b, s)); err != nil {
						b.Fatal(err)
					}
				}
			}
			app, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)")
			if err != nil {
				b.Fatal(err)
			}
			app.SetMaxOpenConns(1)
			for i, ph := range phases {
				if i == 3 { // the prepared phases start on an empty table again
					states[c] = dump(ctx, b, app)
					if _, err := app.ExecContext(ctx, `DELETE FROM items`); err != nil {
						b.Fatal(err)
					}
				}
				d := runPhase(ctx, b, app, ph, rows)
				us[c+"/"+ph] = append(us[c+"/"+ph], float64(d.Microseconds())/float64(phaseRows(ph, rows)))
			}
			if states[c] != dump(ctx, b, app) {
				b.Fatalf("%s: the prepared statements left another table than the plain ones", c)
			}
			if c == "v2" {
				checkStream(ctx, b, f, app)
			}
			app.Close()
			bk.Close()
		}
		if states["v1"] != states["untracked"] || states["v2"] != states["untracked"] {
			b.Fatalf("round %d: the tables differ after the same statements", round)
		}
	}
	for _, ph := range phases {
		base := us["untracked/"+ph]
		for _, c := range contenders {
			b.ReportMetric(median(us[c+"/"+ph]), "µs/"+ph+"-"+c)
			if c == "untracked" {
				continue
			}
			r := make([]float64, len(base))
			for i := range base {
				r[i] = us[c+"/"+ph][i] / base[i]
			}
			lo, hi := slices.Min(r), slices.Max(r)
			b.ReportMetric(median(r), "x/"+ph+"-"+c)
			b.Logf("%s %s: %.1f µs/stmt, %.2f× untracked (min %.2f, max %.2f, %d rounds)", ph, c, median(us[c+"/"+ph]), median(r), lo, hi, len(r))
		}
	}
}

func phaseRows(ph string, rows int) int {
	if strings.HasSuffix(ph, "delete") {
		return rows / 4
	}
	return rows
}

// runPhase runs one phase of single-row statements, 100 per transaction.
func runPhase(ctx context.Context, b *testing.B, app *sql.DB, ph string, rows int) time.Duration {
	mode, op, _ := strings.Cut(ph, "-")
	query := map[string]string{
		"insert": `INSERT INTO items (id, sku, name, qty, price, note, updated) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		"update": `UPDATE items SET qty = qty + 1, updated = ? WHERE id = ?`,
		"delete": `DELETE FROM items WHERE id = ?`,
	}[op]
	args := func(i int) []any {
		switch op {
		case "insert":
			return []any{i + 1, fmt.Sprintf("SKU-%06d", i+1), fmt.Sprintf("item %d", i+1), i % 17, fmt.Sprintf("%d.%02d", i, i%100), strings.Repeat("n", i%50), "2024-01-01 00:00:00+00:00"}
		case "update":
			return []any{"2024-01-02 00:00:00+00:00", (i*7919)%rows + 1}
		}
		return []any{i*4 + 1}
	}
	n := phaseRows(ph, rows)
	t0 := time.Now()
	for start := 0; start < n; start += 100 {
		tx, err := app.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		exec := func(a ...any) (sql.Result, error) { return tx.ExecContext(ctx, query, a...) }
		if mode == "prepared" {
			st, err := tx.PrepareContext(ctx, query)
			if err != nil {
				b.Fatal(err)
			}
			exec = func(a ...any) (sql.Result, error) { return st.ExecContext(ctx, a...) }
		}
		for i := start; i < start+100 && i < n; i++ {
			if _, err := exec(args(i)...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(t0)
}

// dump renders the table, every column, in key order.
func dump(ctx context.Context, b *testing.B, db *sql.DB) string {
	rows, err := db.QueryContext(ctx, `SELECT id, sku, name, qty, price, note, updated FROM items ORDER BY id`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		v := make([]any, 7)
		p := make([]any, 7)
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintln(&out, v...)
	}
	return out.String()
}

// checkStream: the stream (created on the empty table) returns every row
// of the table as an INSERT with its values, and nothing else.
func checkStream(ctx context.Context, b *testing.B, f *fixture, app *sql.DB) {
	info, err := f.b.Stream(ctx, runnerSource("s"))
	if err != nil {
		b.Fatal(err)
	}
	got, _ := readChanges(ctx, b, f, info)
	want := state(b, app, `SELECT * FROM items`, info.TableSchema)
	var w []string
	for _, r := range want {
		w = append(w, "INSERT "+r)
	}
	sort.Strings(w)
	if !slices.Equal(changeLines(got, info.TableSchema), w) {
		b.Fatalf("v2 stream differs from the table: %d changes for %d rows", len(got), len(want))
	}
}

// v1Capture is the capture of the previous sluice (before capture v2),
// for the baseline: a change log and AFTER triggers naming every column.
func v1Capture(table string, cols []string, key string) []string {
	q := sqlitex.Quote
	log := q("sluice_changes_" + table)
	var defs, olds, news, ov, nv []string
	for _, c := range cols {
		defs = append(defs, q("o_"+c), q("n_"+c))
		olds = append(olds, q("o_"+c))
		news = append(news, q("n_"+c))
		ov = append(ov, "OLD."+q(c))
		nv = append(nv, "NEW."+q(c))
	}
	j := func(x []string) string { return strings.Join(x, ", ") }
	ts := `strftime('%Y-%m-%d %H:%M:%f','now') || '+00:00'`
	same := "OLD." + q(key) + " IS NEW." + q(key)
	return []string{
		`CREATE TABLE ` + log + ` (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL, ts TEXT NOT NULL, rid INTEGER, ` + j(defs) + `)`,
		`CREATE TRIGGER v1_ins AFTER INSERT ON ` + q(table) + ` FOR EACH ROW BEGIN INSERT INTO ` + log + ` (op, ts, rid, ` + j(news) + `) VALUES ('I', ` + ts + `, NEW.rowid, ` + j(nv) + `); END`,
		`CREATE TRIGGER v1_del AFTER DELETE ON ` + q(table) + ` FOR EACH ROW BEGIN INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `) VALUES ('D', ` + ts + `, OLD.rowid, ` + j(ov) + `); END`,
		`CREATE TRIGGER v1_upd AFTER UPDATE ON ` + q(table) + ` FOR EACH ROW BEGIN
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `, ` + j(news) + `) SELECT 'U', ` + ts + `, NEW.rowid, ` + j(ov) + `, ` + j(nv) + ` WHERE ` + same + `;
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(olds) + `) SELECT 'KD', ` + ts + `, OLD.rowid, ` + j(ov) + ` WHERE NOT (` + same + `);
	INSERT INTO ` + log + ` (op, ts, rid, ` + j(news) + `) SELECT 'KI', ` + ts + `, NEW.rowid, ` + j(nv) + ` WHERE NOT (` + same + `);
END`,
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mustParse(b *testing.B, src string) dsl.Statement {
	sts, err := dsl.ParseStatements("bench.sql", src)
	if err != nil || len(sts) != 1 {
		b.Fatalf("%s: %v", src, err)
	}
	return sts[0]
}

// readChanges reads every pending change of info.
func readChanges(ctx context.Context, b *testing.B, f *fixture, info *runner.StreamInfo) ([]cdc.Change, cdc.Offset) {
	r, err := f.b.Changes(ctx, info, info.Offset, runner.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var out []cdc.Change
	for {
		batch, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, r.ReadPoint()
		}
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, batch...)
	}
}
