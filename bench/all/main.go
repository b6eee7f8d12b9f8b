// Command all runs every speed benchmark of issue #18 one after the other
// and prints one table of sluice against its baseline per path, with the
// goal each path is held to, the date, the machine and the load average.
//
//	go run ./bench/all -quick            # every benchmark at a size that finishes in minutes on 2 cores
//	go run ./bench/all                   # full sizes (1M rows / changes; tens of minutes)
//	go run ./bench/all -only backfill,sqlitemerge -rounds 5
//	go run ./bench/all -quick -md        # the table as Markdown, for docs/benchmarks.md
//
// Each benchmark is a program under bench/ run as `go run ./bench/NAME`
// with -rounds and, with -quick, -quick; its own output (per-contender
// medians, min–max, peak RSS and the check that every target equals its
// source in every column) goes to stderr as it runs. Each prints, at its
// end, one tab-separated line per compared path:
//
//	SUMMARY <path> <ratio median> <min> <max> <baseline> <peak RSS MB of sluice>
//
// where ratio = sluice's speed / the baseline's speed over alternating
// rounds (for the lock-wait path: the longest wait in milliseconds). This
// program collects those lines; a benchmark that fails, or prints no
// SUMMARY line, is reported as such and the others still run. The exit
// status is 1 when a benchmark failed, 0 otherwise (a missed goal is shown,
// not an error: the machine is shared and the numbers are measurements).
//
// -pg names a PostgreSQL server for the benchmarks that use an existing
// one (bench/backfill); bench/pgapply always starts its own throw-away
// cluster. Default: $SLUICE_TEST_PG, else postgres://postgres@127.0.0.1:5432/postgres.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedata/sluice/bench/internal/machine"
)

var (
	quick  = flag.Bool("quick", false, "run every benchmark at its quick size")
	rounds = flag.Int("rounds", 3, "alternating rounds per benchmark (each benchmark's -rounds)")
	only   = flag.String("only", "", "comma-separated benchmark names to run (default: all)")
	pgURL  = flag.String("pg", defaultPG(), "PostgreSQL server for benchmarks that use an existing one")
	md     = flag.Bool("md", false, "print the final table as Markdown")
)

func defaultPG() string {
	if u := os.Getenv("SLUICE_TEST_PG"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// bench is one program under bench/ and the flags it takes.
type bench struct {
	name string
	args func() []string
}

var benches = []bench{
	{"backfill", func() []string { return []string{"-pg", *pgURL} }},
	{"sqlitemerge", func() []string { return nil }},
	{"pgapply", func() []string { return nil }},
	{"tablestore", func() []string { return nil }},
}

// goal is what issue #18 asks of a path, matched by a substring of the
// SUMMARY line's path name.
type goal struct {
	match string
	text  string
	min   float64 // ratio at least this (0: none)
	max   float64 // value at most this (0: none)
}

var goals = []goal{
	// bench/sqlitemerge
	{match: "application writing", text: "≤ 200 ms", max: 200},
	{match: "SQLite merge pushdown", text: "≥ 0.8×", min: 0.8},
	{match: "SQLite merge into another file", text: "≥ 0.7×", min: 0.7},
	// bench/backfill
	{match: "(vs C library)", text: "≥ 0.3×", min: 0.3},
	{match: "SQLite → SQLite", text: "≥ 0.7×", min: 0.7},
	{match: "vs the faster side", text: "≥ 0.5×", min: 0.5},
	{match: "PostgreSQL → SQLite", text: "≥ 0.5×", min: 0.5},
	{match: "vs append", text: "≥ 0.7×", min: 0.7},
	{match: "PostgreSQL → PostgreSQL backfill, append", text: "≥ 0.8×", min: 0.8},
	// bench/pgapply
	{match: "PostgreSQL pushdown", text: "≥ 0.8×", min: 0.8},
	// bench/tablestore
	{match: "Tablestore", text: "≥ 0.7×", min: 0.7},
}

func goalOf(path string) (goal, bool) {
	for _, g := range goals {
		if strings.Contains(path, g.match) {
			return g, true
		}
	}
	return goal{}, false
}

// summary is one SUMMARY line.
type summary struct {
	bench, path, baseline string
	ratio, lo, hi, rssMB  float64
}

func parseSummary(benchName, line string) (summary, bool) {
	f := strings.Split(strings.TrimRight(line, "\r\n"), "\t")
	if len(f) < 7 || f[0] != "SUMMARY" {
		return summary{}, false
	}
	s := summary{bench: benchName, path: f[1], baseline: f[5]}
	var err error
	for i, p := range []*float64{&s.ratio, &s.lo, &s.hi} {
		if *p, err = strconv.ParseFloat(strings.TrimSuffix(f[2+i], "x"), 64); err != nil {
			return summary{}, false
		}
	}
	s.rssMB, _ = strconv.ParseFloat(strings.TrimSuffix(f[6], "MB"), 64)
	return s, true
}

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	want := map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	start := time.Now().UTC()
	load0 := machine.LoadAvg()
	var all []summary
	var failed []string
	for _, b := range benches {
		if len(want) > 0 && !want[b.name] {
			continue
		}
		args := append([]string{"run", "./bench/" + b.name, "-rounds", strconv.Itoa(*rounds)}, b.args()...)
		if *quick {
			args = append(args, "-quick")
		}
		fmt.Fprintf(os.Stderr, "\n=== %s: go %s (load %s)\n", b.name, strings.Join(args, " "), machine.LoadAvg())
		t0 := time.Now()
		got, err := run(ctx, b.name, args)
		fmt.Fprintf(os.Stderr, "=== %s: %s in %s\n", b.name, status(err, len(got)), time.Since(t0).Round(time.Second))
		if err != nil || len(got) == 0 {
			failed = append(failed, fmt.Sprintf("%s (%s)", b.name, status(err, len(got))))
		}
		all = append(all, got...)
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Printf("\n%s UTC, %s, %d cores; load average %s at start, %s at end; -rounds %d%s\n\n",
		start.Format("2006-01-02 15:04"), cpuModel(), runtime.NumCPU(), load0, machine.LoadAvg(), *rounds, map[bool]string{true: " -quick"}[*quick])
	printTable(os.Stdout, all, *md)
	if len(failed) > 0 {
		fmt.Printf("\nfailed or without a SUMMARY line: %s\n", strings.Join(failed, ", "))
		os.Exit(1)
	}
}

func status(err error, n int) string {
	switch {
	case err != nil:
		return "failed: " + err.Error()
	case n == 0:
		return "printed no SUMMARY line"
	}
	return fmt.Sprintf("%d SUMMARY lines", n)
}

// run runs one benchmark, copying its output to stderr and collecting its
// SUMMARY lines.
func run(ctx context.Context, name string, args []string) ([]summary, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var got []summary
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(os.Stderr, line)
		if s, ok := parseSummary(name, line); ok {
			got = append(got, s)
		}
	}
	_, _ = io.Copy(io.Discard, out)
	return got, cmd.Wait()
}

func printTable(w io.Writer, all []summary, markdown bool) {
	head := []string{"bench", "path", "baseline", "sluice / baseline: median (min–max)", "goal", "met", "sluice peak RSS"}
	rows := [][]string{}
	for _, s := range all {
		g, ok := goalOf(s.path)
		val := fmt.Sprintf("%.2f× (%.2f–%.2f)", s.ratio, s.lo, s.hi)
		met := "–"
		if ok && g.max > 0 {
			val = fmt.Sprintf("%.0f ms (%.0f–%.0f)", s.ratio, s.lo, s.hi)
			met = yesNo(s.ratio <= g.max)
		} else if ok && g.min > 0 {
			met = yesNo(s.ratio >= g.min)
		}
		rss := fmt.Sprintf("%.0f MB", s.rssMB)
		if s.rssMB > 100 {
			rss += " (> 100 MB)"
		}
		gt := g.text
		if !ok {
			gt = "–"
		}
		rows = append(rows, []string{s.bench, s.path, s.baseline, val, gt, met, rss})
	}
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
		fmt.Fprintln(w, "|"+strings.Repeat("---|", len(head)))
		for _, r := range rows {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = strings.ReplaceAll(c, "|", `\|`) // a baseline "a | b" is one cell
			}
			fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
		}
		return
	}
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			fmt.Fprintf(w, "%s%s  ", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		fmt.Fprintln(w)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
