// Package pgtest gives tests a real PostgreSQL server and a fresh database
// per test.
//
// The server is, in order of preference:
//
//  1. the URL in the environment variable SLUICE_TEST_PG;
//  2. a server already listening on 127.0.0.1:5432 as user postgres
//     (trust auth, as on CI images and developer machines);
//  3. a throw-away cluster started with initdb/pg_ctl from the installed
//     binaries (pg_config --bindir, else /usr/lib/postgresql/*/bin) on a
//     free loopback port, once per test binary; when the process runs as
//     root the binaries run as the "postgres" OS user, since they refuse
//     to run as root.
//
// If none is possible the test is skipped with the reason.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the environment variable naming a server URL for tests.
const EnvURL = "SLUICE_TEST_PG"

// DefaultURL is tried when EnvURL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

var (
	once    sync.Once
	baseURL string
	skipWhy string
	started *cluster // the throw-away cluster, nil when none was started
)

// cluster is a throw-away cluster started by this process.
type cluster struct {
	url  string
	dir  string // temporary directory holding data/, log and the socket
	stop func() error
}

// Main runs the tests of a package (call it from TestMain) and stops the
// throw-away cluster, if one was started, before the binary exits.
func Main(m *testing.M) {
	code := m.Run()
	if started != nil {
		_ = started.stop()
	}
	os.Exit(code)
}

// URL returns the URL of a server usable by tests, connected to its
// maintenance database ("postgres"). It skips t when no server is
// available and fails it when a server was requested (SLUICE_TEST_PG) but
// cannot be reached.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { baseURL, skipWhy = find() })
	if baseURL == "" {
		if os.Getenv(EnvURL) != "" {
			t.Fatalf("pgtest: %s", skipWhy)
		}
		t.Skipf("pgtest: no PostgreSQL server: %s", skipWhy)
	}
	return baseURL
}

// NewDatabase creates a fresh, uniquely named database on the test server
// and returns its URL. The database is dropped (WITH (FORCE)) when the test
// ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "sluice_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return WithDatabase(base, name)
}

// WithDatabase returns u (a postgres:// URL) with its database replaced by
// name.
func WithDatabase(u, name string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + name
	return p.String()
}

// find returns a server URL or the reason there is none.
func find() (string, string) {
	if u := os.Getenv(EnvURL); u != "" {
		if err := ping(u); err != nil {
			return "", fmt.Sprintf("%s is set but the server does not answer: %v", EnvURL, err)
		}
		return u, ""
	}
	if err := ping(DefaultURL); err == nil {
		return DefaultURL, ""
	}
	c, err := startCluster()
	if err != nil {
		return "", err.Error()
	}
	started = c
	return c.url, ""
}

func ping(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// binDir finds the directory holding initdb and pg_ctl.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // newest major first (lexical is enough for 1x)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH); install the PostgreSQL server package or set " + EnvURL)
}

// startCluster initializes and starts a cluster in a temporary directory.
// Its stop function stops the server and removes the directory; Main calls
// it when the test binary ends.
func startCluster() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-pgtest-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	asUser := func(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres OS user to run initdb as: %w", err)
		}
		if err := chownTree(dir, u); err != nil {
			return nil, err
		}
		asUser = func(name string, args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
	}
	if out, err := asUser(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off", port, dir)
	if out, err := asUser(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	c := &cluster{
		url: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dir: dir,
		stop: func() error {
			out, err := asUser(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").CombinedOutput()
			_ = os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
			}
			return nil
		},
	}
	if err := ping(c.url); err != nil {
		_ = c.stop()
		return nil, fmt.Errorf("started cluster does not answer: %w", err)
	}
	return c, nil
}

func chownTree(dir string, u *user.User) error {
	var uid, gid int
	if _, err := fmt.Sscan(u.Uid, &uid); err != nil {
		return err
	}
	if _, err := fmt.Sscan(u.Gid, &gid); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Tool returns the path of the PostgreSQL client program name (pg_dump,
// pg_restore, psql) of the newest installed major version — pg_dump
// refuses servers newer than itself — looking in pg_config --bindir,
// /usr/lib/postgresql/*/bin and PATH. It skips t when none is installed.
func Tool(t testing.TB, name string) string {
	t.Helper()
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(found)))
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("pgtest: %s is not installed (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH): install the PostgreSQL client package", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
