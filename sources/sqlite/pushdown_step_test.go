package sqlite_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/sqlite"
)

var errCrash = errors.New("crash between steps")

// stepWorkload applies n random single-statement changes to table src
// (id, name, amount DECIMAL, note) over keys 1..keys: inserts (NULL names
// among them), updates (some to the same values), deletes, re-inserts and
// primary-key changes. It returns the table's rows after each statement by
// the change log's last seq then.
func stepWorkload(f *fixture, rng *rand.Rand, n, keys int, snaps map[int64][]string) {
	f.t.Helper()
	present := map[int]bool{}
	for _, r := range f.rows(`SELECT id FROM src`) {
		var k int
		fmt.Sscan(r, &k)
		present[k] = true
	}
	for i := 0; i < n; i++ {
		k := 1 + rng.IntN(keys)
		amount := fmt.Sprintf("%d.%02d", rng.IntN(1000), rng.IntN(100))
		var name any = fmt.Sprintf("n%d", rng.IntN(4))
		if rng.IntN(4) == 0 {
			name = nil
		}
		switch {
		case !present[k]:
			f.sql(`INSERT INTO src VALUES (?, ?, ?, ?)`, k, name, amount, "ins")
			present[k] = true
		case rng.IntN(10) < 5:
			f.sql(`UPDATE src SET name = ?, amount = ? WHERE id = ?`, name, amount, k)
		case rng.IntN(10) < 2:
			f.sql(`UPDATE src SET note = note WHERE id = ?`, k) // changes nothing
		case rng.IntN(10) < 3:
			nk := 1 + rng.IntN(keys)
			if present[nk] {
				continue
			}
			f.sql(`UPDATE src SET id = ? WHERE id = ?`, nk, k)
			present[k], present[nk] = false, true
		default:
			f.sql(`DELETE FROM src WHERE id = ?`, k)
			present[k] = false
		}
		seq := f.rows(`SELECT seq FROM sqlite_sequence WHERE name = 'sluice_changes_src'`)
		var s int64
		fmt.Sscan(seq[0], &s)
		snaps[s] = f.rows(`SELECT id, name, amount, note FROM src ORDER BY id`)
	}
}

// TestPushdownSteppedExactlyOnce: a merge pushdown committing in steps of
// a few log rows leaves the target equal to the source table (and to a run
// through sluice into another file); a crash between steps leaves the
// target equal to the source as of the committed step's end, with the
// checkpoint and the stream offset there, and the next run completes
// without loss or duplicate.
func TestPushdownSteppedExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		crashAt int // -1: no crash
		first   int64
		lo, hi  int64
		hold    time.Duration
	}{
		{"tiny steps", -1, 3, 2, 5, time.Nanosecond},
		{"crash after first step", 0, 4, 3, 7, time.Nanosecond},
		{"crash after third step", 2, 5, 1, 9, time.Nanosecond},
		{"one transaction", -1, 3, 2, 5, -1},
		{"default sizes", -1, 0, 0, 0, runner.DefaultCommitStep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "src.db")
			f := newFixture(t, "sqlite:"+path)
			f.script("CREATE TABLE src (id BIGINT, name STRING, amount DECIMAL(12,2), note STRING, PRIMARY KEY (id));\n" +
				"ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');\n" +
				"INSERT INTO src VALUES (1, 'a', 1.50, 'pre'), (2, NULL, 2.00, 'pre');\n" +
				"CREATE TABLE `order` (id BIGINT, name STRING, amount DECIMAL(12,2), note STRING, PRIMARY KEY (id));\n" +
				"INSERT INTO `order` SELECT * FROM src;\n" +
				"CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');\n" +
				"CREATE TABLE STREAM t ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');\n")
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			snaps := map[int64][]string{0: f.rows(`SELECT id, name, amount, note FROM src ORDER BY id`)}
			stepWorkload(f, rng, 120, 12, snaps)

			info := f.info("s")
			p := pushPlan(t, info, "", []string{"id", "name", "amount", "note"}, "order", plan.ModeMerge, []string{"id"})
			p.Sink.OneChangePerKey, p.Sink.OnDelete = true, plan.OnDeleteDelete
			pp, err := f.b.Pushdown(ctx, p, info)
			if err != nil {
				t.Fatal(err)
			}
			crashed := false
			steps := 0
			sqlite.SetSteps(pp, tc.first, tc.lo, tc.hi, func(i int) error {
				steps++
				if i == tc.crashAt && !crashed {
					crashed = true
					return errCrash
				}
				return nil
			})
			pp.(runner.SteppedPushdown).SetCommitStep(tc.hold)
			_, from, to, err := pp.Run(ctx, "job")
			if tc.crashAt >= 0 {
				if !errors.Is(err, errCrash) {
					t.Fatalf("run: %v, want the crash", err)
				}
				// committed up to the step's end: target, checkpoint and
				// offset agree
				off := f.info("s").Offset.String()
				cp := f.rows(`SELECT "offset" FROM sluice_checkpoints WHERE job = 'job'`)
				if len(cp) != 1 || !strings.Contains(cp[0], `"`+off+`"`) || off != to.String() || off == from.String() {
					t.Fatalf("after the crash: stream offset %s, checkpoint %v, run from %s to %s", off, cp, from, to)
				}
				var seq int64
				if _, err := fmt.Sscan(off, &seq); err != nil {
					t.Fatalf("offset %s: %v", off, err)
				}
				// (a step may end inside a primary-key change, between its
				// delete and its insert: no statement ended there)
				if want, ok := snaps[seq]; ok {
					if got := f.rows(`SELECT id, name, amount, note FROM "order" ORDER BY id`); !equal(got, want) {
						t.Fatalf("after the crash at seq %d the target is\n%q\nwant the source then\n%q", seq, got, want)
					}
				}
				if _, _, _, err = pp.Run(ctx, "job"); err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.hold < 0 && steps != 0:
				t.Errorf("one transaction ran %d steps", steps)
			case tc.hold == time.Nanosecond && steps < 10:
				t.Errorf("only %d steps over 120 changes", steps)
			}
			src := f.rows(`SELECT id, name, amount, note FROM src ORDER BY id`)
			if got := f.rows(`SELECT id, name, amount, note FROM "order" ORDER BY id`); !equal(got, src) {
				t.Errorf("target\n%q\nsource\n%q", got, src)
			}
			if got := f.rows(`SELECT count(*) FROM sluice_changes_src WHERE seq <= (SELECT seq FROM sqlite_sequence WHERE name = 'sluice_changes_src')`); len(got) != 1 {
				t.Errorf("log %v", got)
			}

			// the same changes through sluice into another file
			r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: "sqlite:" + path}
			defer r.Close()
			job, err := dsl.ParseJob("j.yaml", []byte("name: through\nsource: t\nsink: {table: order, mode: merge, keys: [id], connection: 'sqlite:"+filepath.Join(dir, "other.db")+"'}\n"))
			if err != nil {
				t.Fatal(err)
			}
			ctx2 := runner.WithCreate(ctx, runner.CreateAll)
			if _, err := r.RunJob(ctx2, job); err != nil {
				t.Fatal(err)
			}
			o := newFixture(t, "sqlite:"+filepath.Join(dir, "other.db"))
			// the other file's target starts empty: rows 1 and 2, untouched
			// since the stream's creation, are not in it unless changed
			got := o.rows(`SELECT id, name, amount, note FROM "order" ORDER BY id`)
			var want []string
			for _, s := range src {
				if !strings.HasSuffix(s, " pre") {
					want = append(want, s)
				}
			}
			if !equal(got, want) {
				t.Errorf("through sluice\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestSteppable: only a merge of net changes without a filter, deleting on
// DELETE, commits in steps.
func TestSteppable(t *testing.T) {
	f := newFixture(t, "")
	f.script(`
CREATE TABLE src (id BIGINT, v STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`)
	for i := 1; i <= 30; i++ {
		f.sql(`INSERT INTO src VALUES (?, 'x')`, i)
		f.sql(`UPDATE src SET v = 'y' WHERE id = ?`, i)
	}
	info := f.info("s")
	for i, tc := range []struct {
		name     string
		mode     plan.Mode
		onDelete plan.OnDelete
		filter   string
		one      bool
		stepped  bool
	}{
		{"merge", plan.ModeMerge, plan.OnDeleteDelete, "", true, true},
		{"merge, keys not passed through", plan.ModeMerge, plan.OnDeleteDelete, "", false, false},
		{"soft delete", plan.ModeMerge, plan.OnDeleteSoft, "", true, false},
		{"ignored deletes", plan.ModeMerge, plan.OnDeleteIgnore, "", true, false},
		{"filter", plan.ModeMerge, plan.OnDeleteDelete, "`__change_type` <> 'DELETE'", true, false},
		{"filter on values", plan.ModeMerge, plan.OnDeleteDelete, "v <> 'x'", true, false},
		{"filter keeping net changes", plan.ModeMerge, plan.OnDeleteDelete, "`__change_type` IN ('INSERT', 'UPDATE_AFTER', 'DELETE')", true, true},
		{"history", plan.ModeHistory, "", "", false, false},
		{"append", plan.ModeAppend, "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pushPlan(t, info, tc.filter, []string{"id", "v"}, fmt.Sprintf("t%d", i), tc.mode, []string{"id"})
			p.Sink.OneChangePerKey, p.Sink.OnDelete = tc.one, tc.onDelete
			pp, err := f.b.Pushdown(t.Context(), p, info)
			if err != nil {
				t.Fatal(err)
			}
			pp.(runner.SteppedPushdown).SetCommitStep(time.Nanosecond)
			got := strings.Contains(pp.Steps()[0].What, "commit in steps")
			if got != tc.stepped {
				t.Errorf("stepped = %v, want %v", got, tc.stepped)
			}
		})
	}
}
