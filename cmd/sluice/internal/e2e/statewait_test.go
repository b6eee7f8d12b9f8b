package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// proxy forwards TCP connections from a listener to target once enabled.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

// enable starts listening on p.addr and forwarding to p.target.
func (p *proxy) enable(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
	}
	for _, c := range p.conns {
		c.Close()
	}
}

// freeAddr returns a 127.0.0.1 address where nothing listens (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeWaitsForStateDatabase: serve whose --state PostgreSQL refuses
// connections at start (a port where nothing listens) does not exit:
// /healthz shows "state": retrying with the connect error and the next
// try, and the job retrying; when a TCP proxy to the real server opens on
// that port, serve opens the state database by itself, the job runs and
// its run is recorded in the history. (The outage's attempts never took
// the job lock, so they ran nothing and are not runs of the history.)
func TestServeWaitsForStateDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for serve's backoff against PostgreSQL (skipped with -short)")
	}
	ctx := t.Context()
	pg := pgtest.NewDatabase(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	px := &proxy{addr: freeAddr(t), target: u.Host}
	defer px.close()
	su := *u
	su.Host = px.addr
	stateURL := su.String()

	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "src.db")
	if out := run(ctx, "sql", "--conn", db, `
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');
INSERT INTO t VALUES (1, 'a');`); !strings.HasPrefix(out, "exit 0") {
		t.Fatal(out)
	}
	jobs := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobs, "j.yaml"), []byte("name: j\nsource: s\nsink: {table: copy, mode: append}\nschedule: '@every 1s'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		done <- run(sctx, "serve", "--conn", db, "--state", stateURL, "--listen", addr, "--grace", "1s", jobs)
	}()

	type health struct {
		Status string `json:"status"`
		State  *struct {
			Status    string    `json:"status"`
			LastError string    `json:"last_error"`
			NextTry   time.Time `json:"next_try"`
		} `json:"state"`
		Jobs []struct {
			Job       string `json:"job"`
			Health    string `json:"health"`
			LastError string `json:"last_error"`
		} `json:"jobs"`
	}
	healthz := func() (health, bool) {
		var h health
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return h, false
		}
		defer resp.Body.Close()
		return h, json.NewDecoder(resp.Body).Decode(&h) == nil
	}
	until := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			select {
			case out := <-done:
				t.Fatalf("serve exited while waiting for %s:\n%.4000s", what, out)
			default:
			}
			if time.Now().After(deadline) {
				h, _ := healthz()
				t.Fatalf("no %s in %v; /healthz: %+v", what, limit, h)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var h health
	until("state retrying and the job retrying in /healthz", 60*time.Second, func() bool {
		var ok bool
		h, ok = healthz()
		return ok && h.State != nil && len(h.Jobs) == 1 && h.Jobs[0].Health == "retrying"
	})
	if h.State.Status != "retrying" || !strings.Contains(h.State.LastError, "connect") || h.State.NextTry.IsZero() ||
		!strings.Contains(h.Jobs[0].LastError, "state database not reachable") {
		t.Errorf("/healthz while the state database is down: %+v", h)
	}
	time.Sleep(2 * time.Second)
	select {
	case out := <-done:
		t.Fatalf("serve exited with its state database down:\n%.4000s", out)
	default:
	}

	px.enable(t)
	t0 := time.Now()
	until("the copy and a reachable state database", 120*time.Second, func() bool {
		out := run(ctx, "sql", "--conn", db, "--format", "jsonl", "SELECT count(*) AS n FROM copy")
		h, ok := healthz()
		return strings.Contains(out, `"n":1}`) && ok && h.State == nil
	})
	t.Logf("state database reachable again: serve recovered (state open, job run) %v after the port opened", time.Since(t0).Round(10*time.Millisecond))

	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	until("the run in the history", 60*time.Second, func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM sluice.sluice_runs WHERE job = 'j' AND status = 'committed' AND read_insert = 1`).Scan(&n)
		return err == nil && n == 1
	})
	cancel()
	select {
	case out := <-done:
		if !strings.HasPrefix(out, "exit 0") {
			t.Errorf("serve: %.4000s", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}
