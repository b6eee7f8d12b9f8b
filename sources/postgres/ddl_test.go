package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
)

// TestDDLNeverBreaksWriters: after each DDL on a tracked table the
// application's INSERT, UPDATE and DELETE (a plain connection, no sluice
// command in between) succeed; the next read (Stream, which brings the
// change log in line with the columns, then the read) delivers exactly
// the source's changes, the columns' values included, with nobody
// enabling tracking again. The expected changes
// come from the table itself: the rows written by the step as they are
// now (INSERT or UPDATE_AFTER with every column) and the keys it deleted.
func TestDDLNeverBreaksWriters(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE app (id int PRIMARY KEY, v text, n int, secret text, label varchar(5), amount numeric(6,2))`,
		`INSERT INTO app SELECT i, 'v' || i, i, 's' || i, 'l' || i, i + 0.25 FROM generate_series(1, 6) i`)
	track(t, b, "app")
	mkStream(t, b, "app_s", "app", dsl.ModeStandard, false)
	conn := connect(ctx, t, u)
	steps := []struct {
		name    string
		ddl     string
		writes  []string
		touched []int // keys the writes insert or update
		deleted []int
	}{
		{"add column with a default", `ALTER TABLE app ADD COLUMN c int DEFAULT 7`,
			[]string{`INSERT INTO app (id, v, n, c) VALUES (10, 'new', 10, 70)`, `UPDATE app SET c = 11 WHERE id = 1`, `DELETE FROM app WHERE id = 2`},
			[]int{10, 1}, []int{2}},
		{"drop column", `ALTER TABLE app DROP COLUMN secret`,
			[]string{`INSERT INTO app (id, v, n) VALUES (11, 'after drop', 11)`, `UPDATE app SET v = 'v3b' WHERE id = 3`, `DELETE FROM app WHERE id = 4`},
			[]int{11, 3}, []int{4}},
		{"rename column", `ALTER TABLE app RENAME COLUMN v TO title`,
			[]string{`INSERT INTO app (id, title, n) VALUES (12, 'renamed', 12)`, `UPDATE app SET title = 'v5b' WHERE id = 5`, `DELETE FROM app WHERE id = 10`},
			[]int{12, 5}, []int{10}},
		{"widen int to bigint", `ALTER TABLE app ALTER COLUMN n TYPE bigint`,
			[]string{`INSERT INTO app (id, title, n) VALUES (13, 'big', 5000000000)`, `UPDATE app SET n = -5000000000 WHERE id = 6`},
			[]int{13, 6}, nil},
		{"widen varchar and numeric without a rewrite", `ALTER TABLE app ALTER COLUMN label TYPE varchar(50), ALTER COLUMN amount TYPE numeric(12,2)`,
			[]string{`INSERT INTO app (id, title, n, label, amount) VALUES (14, 'wide', 14, 'a label longer than five', 1234567890.12)`, `UPDATE app SET label = 'longer label' WHERE id = 1`},
			[]int{14, 1}, nil},
		{"new default", `ALTER TABLE app ALTER COLUMN c SET DEFAULT 99`,
			[]string{`INSERT INTO app (id, title, n) VALUES (15, 'default', 15)`, `UPDATE app SET c = DEFAULT WHERE id = 3`},
			[]int{15, 3}, nil},
	}
	for i, st := range steps {
		if _, err := conn.Exec(ctx, st.ddl); err != nil {
			t.Fatalf("%s: %s: %v", st.name, st.ddl, err)
		}
		for _, w := range st.writes {
			if _, err := conn.Exec(ctx, w); err != nil {
				t.Fatalf("%s: the application's %s failed: %v", st.name, w, err)
			}
		}
		if err := readErr(t, b, "app_s"); err != nil {
			t.Fatalf("%s: read: %v", st.name, err)
		}
		var want []string
		for _, k := range st.touched {
			rows := tableRowsAll(t, b, `SELECT * FROM app WHERE id = `+strconv.Itoa(k)+` -- step `+strconv.Itoa(i)) // a new text: the pool's cached statements have the old columns
			op := "UPDATE_AFTER "
			if k >= 10 {
				op = "INSERT "
			}
			want = append(want, op+rows[0])
		}
		for _, k := range st.deleted {
			want = append(want, "DELETE "+strconv.Itoa(k))
		}
		chs, got := read(t, b, "app_s", true)
		var gotKeyed []string
		for i, c := range chs {
			switch c.Op.String() {
			case "UPDATE_BEFORE":
			case "DELETE":
				gotKeyed = append(gotKeyed, "DELETE "+strings.Fields(got[i])[1])
			default:
				gotKeyed = append(gotKeyed, got[i])
			}
		}
		check(t, st.name, sorted(gotKeyed), sorted(want))
	}
}
