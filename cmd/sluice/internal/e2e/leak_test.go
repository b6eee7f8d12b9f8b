package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
	"github.com/sluicedata/sluice/internal/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) != "" {
		os.Exit(execMain())
	}
	pgtest.Main(m)
}

// The markers around each password's character: a leak of any part of a
// password shows one of them.
const pre, post = "Zq7", "Wv9"

func leaks(s string) bool { return strings.Contains(s, pre) || strings.Contains(s, post) }

// secret is one password and the label of its row in the report table.
type secret struct{ label, pw string }

// secrets: one password per printable ASCII character (0x20–0x7E) between
// the markers, one holding all of them, and a few of URL-reserved
// characters together.
func secrets() []secret {
	var out []secret
	all := ""
	for c := byte(' '); c <= '~'; c++ {
		out = append(out, secret{fmt.Sprintf("%q", string(c)), pre + string(c) + post})
		all += string(c)
	}
	return append(out,
		secret{"all printable", pre + all + post},
		secret{"@@##//", pre + "@@##//" + post},
		secret{"%zz (bad escape)", pre + "%zz" + post},
		secret{"${X} and $$", pre + "${X}$$" + post},
		secret{"&password=", pre + "&x=1&" + post},
	)
}

// conns returns the connection strings that carry pw to the database of
// base (a postgres:// URL): the password percent-encoded, written raw, in a
// key=value DSN, and as a query parameter.
func conns(t *testing.T, base, pw string) map[string]string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	db := strings.TrimPrefix(u.Path, "/")
	user := u.User.Username()
	enc := *u
	enc.User = url.UserPassword(user, pw)
	q := strings.ReplaceAll(strings.ReplaceAll(pw, `\`, `\\`), `'`, `\'`)
	// base may come without a query (SLUICE_TEST_PG=postgres://…/postgres):
	// the password parameter then starts the query, else it would be read
	// as part of the database name, which no redaction masks
	sep := "&"
	if u.RawQuery == "" {
		sep = "?"
	}
	return map[string]string{
		"encoded": enc.String(),
		"raw":     "postgres://" + user + ":" + pw + "@" + u.Host + u.Path + "?" + u.RawQuery,
		"dsn":     fmt.Sprintf("host=%s port=%s dbname=%s user=%s password='%s' sslmode=disable", host, port, db, user, q),
		"query":   base + sep + "password=" + url.QueryEscape(pw),
	}
}

// refused is conn pointed at a port where nothing listens.
func refused(conn, port string) string {
	return strings.ReplaceAll(strings.ReplaceAll(conn, ":"+port+"/", ":1/"), "port="+port+" ", "port=1 ")
}

func run(ctx context.Context, args ...string) string {
	var out, errb bytes.Buffer
	code := cli.Main(ctx, args, strings.NewReader(""), &out, &errb)
	return fmt.Sprintf("exit %d\n%s%s", code, out.String(), errb.String())
}

// report collects, per secret and output, whether the output showed it.
type report struct {
	outputs []string
	cells   map[string]map[string]string
}

func (r *report) note(t *testing.T, s secret, output, text string) {
	t.Helper()
	if r.cells[s.label] == nil {
		r.cells[s.label] = map[string]string{}
	}
	if !contains(r.outputs, output) {
		r.outputs = append(r.outputs, output)
	}
	if leaks(text) {
		r.cells[s.label][output] = "LEAK"
		t.Errorf("%s shows password %q:\n%s", output, s.pw, text)
	} else if r.cells[s.label][output] == "" {
		r.cells[s.label][output] = "ok"
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestNoOutputShowsASecret runs every password of secrets() in every form
// of conns() through every output and asserts that no part of it appears.
// With -v it logs the table character × output.
func TestNoOutputShowsASecret(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve and connects a few hundred times (skipped with -short)")
	}
	t.Setenv("SLUICE_LOG", "debug")
	base := pgtest.NewDatabase(t)
	bu, _ := url.Parse(base)
	port := bu.Port()
	ctx := t.Context()
	dir := t.TempDir()
	if out := run(ctx, "sql", "--conn", base, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO t VALUES (1, 'a');`); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte("name: j\nsource: s\nsink: {table: c, mode: append}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &report{cells: map[string]map[string]string{}}
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	type served struct {
		s    secret
		name string
	}
	var all []served
	t0 := time.Now()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sem = make(chan struct{}, 4)
	)
	for i, s := range secrets() {
		forms := conns(t, base, s.pw)
		names := make([]string, 0, len(forms))
		for f := range forms {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			c := forms[f]
			if refused(c, port) == c {
				t.Fatalf("cannot point %q at a refused port", c)
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				// plan against the live server (debug log on stderr), and
				// run against a port where nothing listens: the connect error.
				plan := run(ctx, "plan", "--conn", c, job)
				failed := run(ctx, "run", "--conn", refused(c, port), job)
				mu.Lock()
				defer mu.Unlock()
				// The outputs must show what they are checked for: the
				// plan its masked connection, the run its connect error.
				if f == "encoded" && (!strings.HasPrefix(plan, "exit 0") || !strings.Contains(plan, "via postgres://postgres:xxxxx@") || !strings.Contains(plan, "level=DEBUG")) {
					t.Errorf("plan with %q: want a plan via the masked URL and debug logs, got\n%s", c, plan)
				}
				if !strings.Contains(failed, "exit 1") || !strings.Contains(failed, "connect") && !strings.Contains(failed, "percent-encode") {
					t.Errorf("run with %q: want a connect error, got\n%s", refused(c, port), failed)
				}
				rep.note(t, s, "plan + debug log", plan)
				rep.note(t, s, "connect error", failed)
			}()
			// a serve job per form, connecting to the refused port.
			name := fmt.Sprintf("j%03d_%s", i, f)
			conn, _ := json.Marshal(refused(c, port)) // a JSON string is a YAML double-quoted string
			y := fmt.Sprintf("name: %s\nconnection: %s\nsource: s\nsink: {table: c, mode: append}\nschedule: continuous\n", name, conn)
			if err := os.WriteFile(filepath.Join(jobs, name+".yaml"), []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			all = append(all, served{s, name})
		}
	}

	wg.Wait()
	t.Logf("plan and run of %d connection strings: %v", len(all), time.Since(t0))
	// serve: every job fails to connect and records its error.
	state := filepath.Join(dir, "state.db")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan string, 1)
	go func() {
		done <- run(sctx, "serve", "--state", "sqlite:"+state, "--listen", addr, "--grace", "1s", jobs)
	}()
	hist := openHistory(t, state)
	deadline := time.Now().Add(90 * time.Second)
	for {
		n := 0
		_ = hist.QueryRow(`SELECT count(DISTINCT job) FROM sluice_runs`).Scan(&n)
		if n >= len(all) {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			rs := historyRows(t, hist)
			var missing []string
			for _, sv := range all {
				if !strings.Contains(rs, sv.name+"\t") {
					missing = append(missing, sv.name)
				}
			}
			log := <-done
			for _, m := range missing[:min(3, len(missing))] {
				for _, line := range strings.Split(log, "\n") {
					if strings.Contains(line, m) {
						t.Log(line)
					}
				}
			}
			t.Fatalf("after 90 s the history holds runs of %d of %d jobs; missing %v", n, len(all), missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
	healthz, metrics := get(t, "http://"+addr+"/healthz"), get(t, "http://"+addr+"/metrics")
	cancel()
	serveLog := <-done

	rows := historyRows(t, hist)
	status := run(ctx, "status", "--state", "sqlite:"+state, jobs)
	history := run(ctx, "history", "--state", "sqlite:"+state, "--limit", "100000")
	byJob := func(text, name string) string {
		var b strings.Builder
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, name) {
				b.WriteString(line + "\n")
			}
		}
		return b.String()
	}
	// Whole texts are checked once (a leak in a line naming no job is
	// still a leak); per-job lines fill the table.
	for _, o := range []struct{ name, text string }{
		{"serve log", serveLog}, {"history rows", rows}, {"/healthz", healthz},
		{"/metrics", metrics}, {"status", status}, {"history", history},
	} {
		if leaks(o.text) {
			t.Errorf("%s shows a password", o.name)
		}
		for _, sv := range all {
			rep.note(t, sv.s, o.name, byJob(o.text, sv.name))
		}
	}
	if strings.Count(rows, "connect") < len(all)/2 {
		t.Errorf("the history rows hold few connect errors:\n%.2000s", rows)
	}
	if !strings.Contains(rows, "j000_dsn") || !strings.Contains(healthz, "j000_dsn") || !strings.Contains(status, "j000_dsn") {
		t.Errorf("an output lacks the jobs: history rows %d bytes, /healthz %d bytes, status %d bytes", len(rows), len(healthz), len(status))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s", "password holds")
	for _, o := range rep.outputs {
		fmt.Fprintf(&b, " | %s", o)
	}
	b.WriteString("\n")
	for _, s := range secrets() {
		fmt.Fprintf(&b, "%-20s", s.label)
		for _, o := range rep.outputs {
			fmt.Fprintf(&b, " | %-*s", len(o), rep.cells[s.label][o])
		}
		b.WriteString("\n")
	}
	t.Logf("forms per password: encoded URL, raw URL, key=value DSN, ?password= (cells: ok = no part shown in any form)\n%s", b.String())
}

func openHistory(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// historyRows renders every column of every row of the run history.
func historyRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	rs, err := db.Query(`SELECT * FROM sluice_runs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var b strings.Builder
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(&b, "%v\t", v)
		}
		b.WriteString("\n")
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
