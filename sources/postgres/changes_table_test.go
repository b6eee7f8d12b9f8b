package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
)

// TestTableImagesMatchWindowRead: the read that takes the images at the
// read point from the table (tableImagesQuery) returns the same net
// changes as the window read over the log (the read the conformance suite
// checks), in the same snapshot, after random inserts, updates (to new
// values, back to the same values, to NULL, of the key itself), deletes,
// re-inserts and a TRUNCATE, over several windows.
func TestTableImagesMatchWindowRead(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE ti (id int PRIMARY KEY, v numeric(10,2), s text, c char(4))`)
	track(t, b, "ti")
	mkStream(t, b, "ti_s", "ti", dsl.ModeStandard, false)
	rng := rand.New(rand.NewPCG(7, 11))
	val := func() string {
		switch rng.IntN(4) {
		case 0:
			return "NULL"
		default:
			return fmt.Sprintf("%d.%02d", rng.IntN(5), rng.IntN(3))
		}
	}
	var seq int64
	for round := 0; round < 6; round++ {
		var stmts []string
		for i := 0; i < 60; i++ {
			id := rng.IntN(25)
			switch rng.IntN(7) {
			case 0, 1:
				stmts = append(stmts, fmt.Sprintf(`INSERT INTO ti VALUES (%d, %s, 'x%d', 'c') ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v`, id, val(), rng.IntN(2)))
			case 2:
				stmts = append(stmts, fmt.Sprintf(`UPDATE ti SET v = %s, s = 'x%d' WHERE id = %d`, val(), rng.IntN(2), id))
			case 3:
				stmts = append(stmts, fmt.Sprintf(`UPDATE ti SET v = v WHERE id = %d`, id))
			case 4:
				stmts = append(stmts, fmt.Sprintf(`DELETE FROM ti WHERE id = %d`, id))
			case 5:
				stmts = append(stmts, fmt.Sprintf(`UPDATE ti SET id = %d WHERE id = %d AND NOT EXISTS (SELECT 1 FROM ti WHERE id = %d)`, 100+id, id, 100+id))
			case 6:
				stmts = append(stmts, fmt.Sprintf(`UPDATE ti SET s = 'y%d' WHERE id BETWEEN %d AND %d`, rng.IntN(2), id, id+3))
			}
		}
		if round == 3 {
			stmts = append(stmts, `TRUNCATE ti`, `INSERT INTO ti VALUES (1, 1, 'x0', 'c')`)
		}
		sqlExec(t, b, stmts...)
		// Both kinds of new image are in the window: paired ('U', left
		// out of the table read's sort) and of key changes ('A').
		var ops string
		ops, seq = logOps(t, b, "log_ti", seq)
		if !strings.Contains(ops, "U") || !strings.Contains(ops, "A") {
			t.Fatalf("round %d: logged %q; the test covers both 'U' and 'A'", round, ops)
		}

		window, table := bothReads(t, b, "ti_s")
		if len(window) == 0 {
			t.Fatalf("round %d: no changes read; the test reads nothing", round)
		}
		if !slices.Equal(window, table) {
			t.Errorf("round %d:\nwindow read %q\ntable read  %q", round, window, table)
		}
	}
}

// netRows returns the rows of a read without its version and time
// columns, as sorted text.
func netRows(ctx context.Context, tx pgx.Tx, q string) ([]string, error) {
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vs, err := rows.Values()
		if err != nil {
			return nil, err
		}
		var parts []string
		for i, v := range vs {
			if i == 1 || i == 2 { // __commit_version, __commit_timestamp
				continue
			}
			parts = append(parts, fmt.Sprint(v))
		}
		out = append(out, strings.Join(parts, " "))
	}
	slices.Sort(out)
	return out, rows.Err()
}
