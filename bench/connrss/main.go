// Command connrss measures what one SQLite connection to a database file
// costs the process (issue #19): every connection parses the file's whole
// schema and keeps it, so on a file with many tracked tables (a table, its
// change log, two helper tables and the capture triggers each) the
// connections a process holds set its memory.
//
// It opens -conns connections to the file one after the other, the way
// sluice opens them (sqlitex.OpenShared's pragmas, through
// database/sql with modernc.org/sqlite), makes each read the schema, and
// prints the process's RSS after each with the Go heap in use, then the
// mean RSS per connection (from the second on, the first also pays for
// the driver's start).
//
//	go run ./bench/connrss -db /path/to/scale-1000.db -conns 4
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"

	_ "modernc.org/sqlite"
)

var (
	dbPath = flag.String("db", "", "the SQLite database file (opened read-only)")
	conns  = flag.Int("conns", 4, "connections to open, one after the other")
)

func main() {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// rssKB is the process's resident set (VmRSS) in kB.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

func run(ctx context.Context) error {
	if *dbPath == "" {
		return fmt.Errorf("-db is required")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "recursive_triggers(1)")
	q.Add("_dqs", "0")
	q.Add("mode", "ro")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: *dbPath}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	var objs, triggers int
	var held []*sql.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	base := rssKB()
	fmt.Printf("start: RSS %.1f MB, Go heap in use %.1f MB\n", float64(base)/1024, heapMB())
	var after []int64
	for i := range *conns {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		held = append(held, c)
		if err := c.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE type = 'trigger') FROM sqlite_schema`).Scan(&objs, &triggers); err != nil {
			return err
		}
		r := rssKB()
		after = append(after, r)
		fmt.Printf("connection %d: RSS %.1f MB (+%.1f), Go heap in use %.1f MB\n", i+1, float64(r)/1024, float64(r-base)/1024, heapMB())
		base = r
	}
	fmt.Printf("schema: %d objects, %d triggers\n", objs, triggers)
	if len(after) > 1 {
		fmt.Printf("per connection (2nd to %dth): %.1f MB\n", len(after), float64(after[len(after)-1]-after[0])/1024/float64(len(after)-1))
	}
	return nil
}
