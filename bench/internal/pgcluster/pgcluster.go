// Package pgcluster starts throw-away PostgreSQL clusters for the benchmark
// programs under bench/, so that they never touch a shared server.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Start initializes and starts a throw-away cluster (initdb, pg_ctl) with
// the server settings given ("name=value", passed as -c options)
// on a free loopback port, as the postgres OS user when running as root
// (initdb refuses root). It returns the URL of its postgres database and
// a function that stops it and removes its files.
func Start(ctx context.Context, settings []string) (string, func(), error) {
	bin, err := BinDir()
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "sluice-bench-pg-")
	if err != nil {
		return "", nil, err
	}
	as := func(name string, args ...string) *exec.Cmd { return exec.CommandContext(ctx, name, args...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("running as root and there is no postgres OS user to run initdb as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		as = func(name string, args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := as(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s", port, dir)
	for _, s := range settings {
		opts += " -c " + s
	}
	stop := func() {
		_ = as(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").Run()
		os.RemoveAll(dir)
	}
	if out, err := as(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		stop()
		return "", nil, fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, url)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the started cluster does not answer: %w", err)
	}
	c.Close(cctx)
	return url, stop, nil
}

// BinDir finds the directory of initdb, pg_ctl and pgbench.
func BinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH); install the PostgreSQL server package or pass -pg URL")
}

// PgbenchPath finds pgbench.
func PgbenchPath() (string, error) {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	if d, err := BinDir(); err == nil {
		if _, err := os.Stat(filepath.Join(d, "pgbench")); err == nil {
			return filepath.Join(d, "pgbench"), nil
		}
	}
	return "", errors.New("pgbench is not installed")
}

// WithDB returns u (a postgres:// URL) with its database replaced by name.
func WithDB(u, name string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + name
	return p.String()
}
