package serve

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
)

type selfClassified struct{ transient bool }

func (e selfClassified) Error() string   { return "backend error" }
func (e selfClassified) Transient() bool { return e.transient }

func TestIsTransient(t *testing.T) {
	wrap := func(err error) error { return &runner.RunError{Job: "j", Err: fmt.Errorf("read: %w", err)} }
	transient := []error{
		&pgconn.PgError{Code: "40001"},
		&pgconn.PgError{Code: "40P01"},
		&pgconn.PgError{Code: "08006"},
		&pgconn.PgError{Code: "57P01"},
		&pgconn.PgError{Code: "53300"},
		wrap(&pgconn.PgError{Code: "40001"}),
		wrap(context.DeadlineExceeded),
		wrap(syscall.ECONNREFUSED),
		wrap(syscall.ECONNRESET),
		wrap(io.ErrUnexpectedEOF),
		wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("no route")}),
		wrap(runner.ErrOffsetMoved),
		wrap(sql.ErrConnDone),
		wrap(pgconn.ErrConnClosed),
		wrap(errors.New("database is locked (5) (SQLITE_BUSY)")),
		wrap(errors.New("database or disk is full (13)")),
		wrap(selfClassified{true}),
		wrap(runner.ErrSchemaChanged),
		wrap(runner.ErrPlanStale),
		wrap(fmt.Errorf("table stream s: %w: enable tracking again", runner.SchemaSentinel("table changed"))),
		// A schema refusal wrapping a database error that alone is
		// permanent (a DDL racing with the log's alignment): retried.
		wrap(fmt.Errorf("table stream s: %w: %w", runner.SchemaSentinel("bringing the change log in line failed"), &pgconn.PgError{Code: "42804"})),
		&pgconn.PgError{Code: "28P01"}, // invalid password
		&pgconn.PgError{Code: "28000"}, // role is not permitted to log in
		&pgconn.PgError{Code: "53100"}, // disk full
	}
	permanent := []error{
		nil,
		context.Canceled,
		wrap(context.Canceled),
		&pgconn.PgError{Code: "42P01"}, // undefined table
		&pgconn.PgError{Code: "42804"}, // datatype mismatch
		&pgconn.PgError{Code: "23505"}, // unique violation
		wrap(runner.ErrNoStream),
		wrap(errors.New(`no such table: "orders"`)),
		pos.Errorf(pos.Pos{File: "j.yaml", Line: 3, Col: 9}, "unknown column %q", "amout"),
		wrap(selfClassified{false}),
	}
	for _, err := range transient {
		if !IsTransient(err) {
			t.Errorf("IsTransient(%v) = false, want true", err)
		}
	}
	for _, err := range permanent {
		if IsTransient(err) {
			t.Errorf("IsTransient(%v) = true, want false", err)
		}
	}
}

func TestIsTransientSQLiteBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	db1, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db1.Close()
	db2, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	ctx := t.Context()
	if _, err := db1.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	conn, err := db1.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	_, err = db2.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	if err == nil {
		t.Fatal("no SQLITE_BUSY")
	}
	if !IsTransient(fmt.Errorf("write: %w", err)) {
		t.Errorf("IsTransient(%v) = false", err)
	}
}

func TestBackoff(t *testing.T) {
	b := DefaultRetryBackoff()
	none := func() float64 { return 0 }
	full := func() float64 { return 0.999999 }
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for n, w := range want {
		if got := b.Delay(n, none); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
		if got := b.Delay(n, full); got < w/2 || got > w {
			t.Errorf("Delay(%d) with jitter = %v, want in [%v, %v]", n, got, w/2, w)
		}
	}
	if got := b.Delay(5000, none); got != time.Minute {
		t.Errorf("Delay(5000) = %v, want the cap", got)
	}
	idle := DefaultIdleBackoff()
	if idle.Delay(0, nil) != 100*time.Millisecond || idle.Delay(100, nil) != 5*time.Second {
		t.Errorf("idle bounds %v … %v", idle.Delay(0, nil), idle.Delay(100, nil))
	}
}

func TestJobFilesAndWatch(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "name: a\n")
	write("sub/b.sql", "-- name: b\n")
	write("notes.txt", "x")
	write(".a.yaml.swp", "x")
	write("..data/c.yaml", "x")
	files, err := JobFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "sub/b.sql")}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Errorf("JobFiles = %v, want %v", files, want)
	}

	clock := NewFakeClock(t0)
	changed := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, clock, time.Second, []string{dir}, func() { changed <- struct{}{} })
	}()
	tick := func() {
		t.Helper()
		if err := clock.WaitTimers(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	expect := func(want bool) {
		t.Helper()
		tick()
		if err := clock.WaitTimers(t.Context(), 1); err != nil { // the poll is done
			t.Fatal(err)
		}
		select {
		case <-changed:
			if !want {
				t.Error("change reported without a change")
			}
		default:
			if want {
				t.Error("change not reported")
			}
		}
	}
	expect(false)
	write("a.yaml", "name: a\nschedule: '@hourly'\n")
	expect(true)
	expect(false)
	write("d.yaml", "name: d\n")
	expect(true)
	if err := os.Remove(filepath.Join(dir, "sub/b.sql")); err != nil {
		t.Fatal(err)
	}
	expect(true)
	write("notes.txt", "changed") // not a job file
	expect(false)
	cancel()
	<-done
}

func TestStatusOf(t *testing.T) {
	hist := newMemHistory()
	ctx := t.Context()
	now := time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)
	_, _ = hist.Record(ctx, &Run{Job: "a", Status: StatusCommitted, Start: now.Add(-time.Hour), End: now.Add(-time.Hour)})
	_, _ = hist.Record(ctx, &Run{Job: "b", Status: StatusFailed, Error: "no such table", End: now})
	_, _ = hist.Record(ctx, &Run{Job: "e", Status: StatusFailed, Error: "no such table", End: now})
	_, _ = hist.Record(ctx, &Run{Job: "f", Status: StatusTransient, Error: "connection refused", End: now, RetryAt: now.Add(8 * time.Second)})
	_, _ = hist.Record(ctx, &Run{Job: "g", Status: StatusCommitted, Start: now.Add(-time.Hour), End: now.Add(-time.Hour)})
	_, _ = hist.Record(ctx, &Run{Job: "h", Status: StatusCommitted, Start: now.Add(-time.Hour), End: now.Add(-time.Hour)})
	jobs := []*plan.Job{testJob("a", "0 * * * *"), testJob("b", "continuous"), testJob("c", "nonsense"), testJob("d", ""),
		testJob("e", "0 * * * *"), testJob("f", "0 * * * *"), testJob("g", "0 * * * *"), testJob("h", "0 * * * *")}
	lag := func(ctx context.Context, j *plan.Job) (Lag, error) {
		switch j.Name {
		case "d", "g": // the stream is gone: the next run fails too
			return Lag{}, fmt.Errorf("read pending: %w", runner.ErrNoStream)
		case "h": // the source is down for now: the last run's health stands
			return Lag{}, fmt.Errorf("read pending: %w", syscall.ECONNREFUSED)
		}
		return Lag{Changes: 3, Age: time.Minute}, nil
	}
	got, err := StatusOf(ctx, jobs, hist, lag, now)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		health  string
		next    string
		lag     int64
		nextTry string
	}
	want := map[string]row{
		"a": {HealthOK, "11:00", 3, ""},
		"b": {HealthStopped, "", 3, ""},
		"c": {HealthBroken, "", 3, ""},
		"d": {HealthFailing, "", -1, ""},
		"e": {HealthStopped, "", 3, ""}, // stopped: no next fire, although its schedule has one
		"f": {HealthRetrying, "11:00", 3, "10:30:08"},
		"g": {HealthFailing, "11:00", -1, ""},
		"h": {HealthOK, "11:00", -1, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statuses, want %d", len(got), len(want))
	}
	for _, st := range got {
		w := want[st.Job]
		next, nextTry := "", ""
		if st.Next != nil {
			next = st.Next.Format("15:04")
		}
		if st.NextTry != nil {
			nextTry = st.NextTry.Format("15:04:05")
		}
		lagN := int64(-1)
		if st.Lag != nil {
			lagN = st.Lag.Changes
		}
		if st.Health != w.health || next != w.next || lagN != w.lag || nextTry != w.nextTry {
			t.Errorf("%s: health %q next %q lag %d next try %q; want %+v", st.Job, st.Health, next, lagN, nextTry, w)
		}
		if healthy := w.health == HealthOK || w.health == HealthNeverRun || w.health == HealthRetrying; st.Healthy != healthy {
			t.Errorf("%s: healthy %v, want %v (health %s)", st.Job, st.Healthy, healthy, st.Health)
		}
	}
	// Without a history nothing is known of the runs: health "unknown",
	// which a lag error that retrying does not fix still makes "failing".
	none, err := StatusOf(ctx, []*plan.Job{testJob("a", "0 * * * *"), testJob("g", "0 * * * *")}, nil, lag, now)
	if err != nil {
		t.Fatal(err)
	}
	if none[0].Health != HealthUnknown || !none[0].Healthy || none[0].LastRun != nil || none[1].Health != HealthFailing {
		t.Errorf("without a history: %s healthy=%v last run %v, %s; want %s healthy, no last run, %s", none[0].Health, none[0].Healthy, none[0].LastRun, none[1].Health, HealthUnknown, HealthFailing)
	}
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"job":"a"`, `"health":"ok"`, `"age_seconds":60`, `"status":"committed"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	// A single unnamed partition's offset is its position; shards' are
	// keyed by partition name.
	r := Run{Job: "x", Read: map[cdc.Op]int64{cdc.OpUpdateAfter: 2}, To: cdc.SingleOffset("9"),
		From: cdc.Offset{Positions: map[string]string{"shard-1": "a", "shard-2": "b"}}}
	b, _ = json.Marshal(r)
	if !strings.Contains(string(b), `"read":{"UPDATE_AFTER":2}`) || !strings.Contains(string(b), `"to":"9"`) ||
		!strings.Contains(string(b), `"from":{"shard-1":"a","shard-2":"b"}`) {
		t.Errorf("Run JSON %s", b)
	}
}

// TestFakeClockTimerAt: a timer for an instant fires when the fake time
// reaches it, however the time moved after the timer was made, and at
// once for an instant already passed.
func TestFakeClockTimerAt(t *testing.T) {
	clock := NewFakeClock(t0)
	at := t0.Add(10 * time.Second)
	tm := clock.NewTimerAt(at)
	clock.Advance(2 * time.Second) // moved after the timer was made
	clock.Set(at.Add(-time.Millisecond))
	select {
	case got := <-tm.C():
		t.Fatalf("fired at %v, before %v", got, at)
	default:
	}
	clock.Set(at)
	select {
	case got := <-tm.C():
		if !got.Equal(at) {
			t.Errorf("fired with %v, want %v", got, at)
		}
	default:
		t.Fatalf("not fired at %v", at)
	}
	select {
	case <-clock.NewTimerAt(t0).C():
	default:
		t.Error("a timer for a passed instant did not fire at once")
	}
}

// TestIsTransientRealFaults: the errors real drivers return for faults an
// operator fixes (a full disk, a read-only file, a role without LOGIN, a
// terminated session) are transient, and the job's own faults are not.
func TestIsTransientRealFaults(t *testing.T) {
	ctx := t.Context()
	t.Run("sqlite full", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "full.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // max_page_count is a setting of the connection
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (x BLOB)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "PRAGMA max_page_count = 4"); err != nil {
			t.Fatal(err)
		}
		_, err = db.ExecContext(ctx, "INSERT INTO t VALUES (zeroblob(100000))")
		if err == nil || !strings.Contains(err.Error(), "full") {
			t.Fatalf("no SQLITE_FULL: %v", err)
		}
		if !IsTransient(fmt.Errorf("write: %w", err)) {
			t.Errorf("IsTransient(%v) = false", err)
		}
	})
	t.Run("sqlite read-only", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ro.db")
		rw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer rw.Close()
		if _, err := rw.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
			t.Fatal(err)
		}
		ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		_, err = ro.ExecContext(ctx, "INSERT INTO t VALUES (1)")
		if err == nil {
			t.Fatal("no SQLITE_READONLY")
		}
		if !IsTransient(fmt.Errorf("write: %w", err)) {
			t.Errorf("IsTransient(%v) = false", err)
		}
		_, err = rw.ExecContext(ctx, "INSERT INTO missing VALUES (1)")
		if err == nil || IsTransient(err) {
			t.Errorf("a missing table: IsTransient(%v) = true, want false", err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		admin, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		role := "sluice_nologin_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
		role = role[:min(len(role), 60)]
		_, _ = admin.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
		if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" NOLOGIN PASSWORD 'pw'"); err != nil {
			t.Fatal(err)
		}
		defer admin.Exec(context.WithoutCancel(ctx), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()) // before admin closes
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.User, cfg.Password = role, "pw"
		_, err = pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			t.Fatal("a role without LOGIN connected")
		}
		if !IsTransient(fmt.Errorf("open source: %w", err)) {
			t.Errorf("IsTransient(%v) = false", err)
		}
		if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		victim, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("after GRANT of LOGIN: %v", err)
		}
		defer victim.Close(ctx)
		if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", victim.PgConn().PID()); err != nil {
			t.Fatal(err)
		}
		_, err = victim.Exec(ctx, "SELECT 1")
		if err == nil {
			t.Fatal("a terminated session answered")
		}
		if !IsTransient(fmt.Errorf("read: %w", err)) {
			t.Errorf("IsTransient(%v) = false", err)
		}
		_, err = admin.Exec(ctx, "SELECT * FROM missing_table")
		if err == nil || IsTransient(err) {
			t.Errorf("a missing table: IsTransient(%v) = true, want false", err)
		}
	})
}
