package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/runner"
)

// TestRestoredLogRowsNeverRead: log rows whose transaction id this
// cluster has not assigned yet — what pg_restore of a log from a cluster
// further along, or a cluster restored to an earlier point, leaves; here
// written into the log as pg_restore's COPY would — make every read
// refuse, naming the way on, instead of being delivered once the
// cluster's counter passes them; enabling tracking again deletes them and
// keeps this cluster's own rows.
func TestRestoredLogRowsNeverRead(t *testing.T) {
	b, u := openDB(t)
	ctx := t.Context()
	sqlExec(t, b, `CREATE TABLE rt (id int PRIMARY KEY, v text)`)
	track(t, b, "rt")
	mkStream(t, b, "rt_s", "rt", "STANDARD", false)
	app := connect(ctx, t, u)
	appExec := func(q string) {
		t.Helper()
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("application: %s: %v", q, err)
		}
	}
	appExec(`INSERT INTO rt VALUES (1, 'a')`)
	_, got := read(t, b, "rt_s", true)
	check(t, "first read", got, []string{"INSERT 1 a"})

	// The restored rows: a transaction id a million ahead of this
	// cluster's, an insert of a row the table does not have.
	sqlExec(t, b, `INSERT INTO sluice.log_rt (__op, __txid, id, v) VALUES ('I', (pg_current_xact_id()::text::bigint + 1000000)::text::xid8, 2, 'ghost')`)
	appExec(`UPDATE rt SET v = 'b' WHERE id = 1`)
	s := streamOffset(t, b, "rt_s")
	before := s.Offset.Encode()
	_, err := b.Changes(ctx, s, s.Offset, runner.ReadOptions{})
	if !errors.Is(err, ErrRestoredLog) || !strings.Contains(err.Error(), "ALTER TABLE rt SET PROPERTIES ('change_tracking' = 'true')") || !strings.Contains(err.Error(), "1 row(s)") {
		t.Fatalf("read of a log with a restored row: %v, want ErrRestoredLog with the way on", err)
	}
	if after := streamOffset(t, b, "rt_s").Offset.Encode(); after != before {
		t.Errorf("offset moved by a refused read: %s -> %s", before, after)
	}

	track(t, b, "rt")
	_, got = read(t, b, "rt_s", true)
	check(t, "read after enabling tracking again", got, []string{"UPDATE_BEFORE 1 a", "UPDATE_AFTER 1 b"})
	if rows := tableRows(t, b, `SELECT id::text FROM sluice.log_rt WHERE v = 'ghost'`); len(rows) != 0 {
		t.Errorf("restored row still in the log: %v", rows)
	}
}
