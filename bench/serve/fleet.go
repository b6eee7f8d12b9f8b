package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The fleet variant of the scale phase (-procs N, issue #19): N `sluice
// serve` processes on the same job files and state database. Each fire
// must run once across the fleet and a killed process's jobs must run
// elsewhere within one schedule period. It measures, per process, the runs
// (sluice_runs_total by result), the skipped fires (sluice_fires_skipped_total
// by reason: locked = another process has the job) and the rows read over
// the whole phase, and the connections it holds (sockets to the PostgreSQL
// server, or descriptors on the SQLite files); and across the fleet, the
// jobs whose change was read by more than one process (a fire run twice),
// and the delivery of one change per table before and after one process
// is killed (SIGKILL, so it releases nothing itself).
var scaleProcs = flag.Int("procs", 1, "serve processes of the scale phase sharing the jobs and the state database (>1: the fleet report, with one process killed half-way)")

type fleetProc struct {
	committed, empty, failed  float64 // runs
	locked, unchanged, runnin float64 // skipped fires
	rowsRead                  float64
	conns                     int
	killed                    bool
}

type fleetResult struct {
	backend       string
	jobs, procs   int
	perProc       []fleetProc
	readTwice     int // jobs whose one change was read by more than one process
	before, after delivery
}

type delivery struct {
	contP50, contP99, timedMax time.Duration
	delivered, tables          int
}

var fleetResults []fleetResult

// scaleDispatch runs the scale phase on one process, or on -procs of them
// (then the result is appended to fleetResults and the returned one has
// no jobs).
func scaleDispatch(ctx context.Context, bin, dir, jobDir string, env scaleEnv) (scaleResult, error) {
	if *scaleProcs <= 1 {
		return scaleRun(ctx, bin, dir, jobDir, env)
	}
	fr, err := scaleFleet(ctx, bin, dir, jobDir, env, *scaleProcs)
	fleetResults = append(fleetResults, fr)
	return scaleResult{}, err
}

// metricsOf sums the counters of one serve process's /metrics by
// "name{label}" (e.g. `sluice_runs_total{committed}`), over jobs.
func metricsOf(addr string) (map[string]float64, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range []struct{ name, label string }{
			{"sluice_runs_total", "result"}, {"sluice_fires_skipped_total", "reason"}, {"sluice_rows_total", "stage"},
		} {
			if !strings.HasPrefix(line, m.name+"{") {
				continue
			}
			i := strings.Index(line, m.label+`="`)
			j := strings.LastIndexByte(line, ' ')
			if i < 0 || j < 0 {
				continue
			}
			v := line[i+len(m.label)+2:]
			v = v[:strings.IndexByte(v, '"')]
			f, _ := strconv.ParseFloat(line[j+1:], 64)
			out[m.name+"{"+v+"}"] += f
			if m.name == "sluice_runs_total" && f > 0 {
				if k := strings.Index(line, `job="`); k >= 0 {
					job := line[k+5:]
					out["ran:"+job[:strings.IndexByte(job, '"')]] += f
				}
			}
			if m.name == "sluice_rows_total" && v == "read" {
				k := strings.Index(line, `job="`)
				if k >= 0 {
					job := line[k+5:]
					out["read:"+job[:strings.IndexByte(job, '"')]] += f
				}
			}
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return out, sc.Err()
}

// pgSockets counts pid's TCP connections to port 5432 (its PostgreSQL
// sessions).
func pgSockets(pid int) int {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) > 9 && strings.HasSuffix(fs[2], ":1538") && fs[3] == "01" { // remote port 5432, ESTABLISHED
				inodes[fs[9]] = true
			}
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(t, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(t, "socket:["), "]")] {
			n++
		}
	}
	return n
}

func scaleFleet(ctx context.Context, bin, dir, jobDir string, env scaleEnv, procs int) (fleetResult, error) {
	fr := fleetResult{backend: env.backend, jobs: env.n, procs: procs, perProc: make([]fleetProc, procs)}
	conns := env.conns
	if env.backend == "PostgreSQL" {
		conns = pgSockets
	}
	srvs := make([]*server, procs)
	addrs := make([]string, procs)
	defer func() {
		for _, s := range srvs {
			if s != nil {
				_, _, _, _ = s.stop()
			}
		}
	}()
	for p := range procs {
		addr, err := freePort()
		if err != nil {
			return fr, err
		}
		logFile := filepath.Join(dir, fmt.Sprintf("fleet-%s-%d-%d.log", env.backend, env.n, p))
		s, err := startServer(ctx, bin, logFile, append(append([]string{"--listen", addr}, env.args...), jobDir)...)
		if err != nil {
			return fr, err
		}
		srvs[p], addrs[p] = s, addr
	}
	client := &http.Client{Timeout: time.Second}
	for p, addr := range addrs {
		for {
			resp, err := client.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Since(srvs[p].start) > 5*time.Minute {
				return fr, fmt.Errorf("process %d not ready after 5 minutes", p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	sample := func() {
		for p, s := range srvs {
			if s != nil && !fr.perProc[p].killed {
				fr.perProc[p].conns = max(fr.perProc[p].conns, conns(s.cmd.Process.Pid))
			}
		}
	}
	// Two fires of every @every job before the first change.
	for t0 := time.Now(); time.Since(t0) < 22*time.Second; time.Sleep(time.Second) {
		sample()
	}
	round := func(id int64, deadline time.Duration) (delivery, error) {
		arrived, err := deliverRound(ctx, env, id, 0, deadline, sample)
		if err != nil {
			return delivery{}, err
		}
		var d delivery
		var cont, timed []time.Duration
		for i, v := range arrived {
			if i < env.n/2 {
				cont = append(cont, v)
			} else {
				timed = append(timed, v)
			}
		}
		slices.Sort(cont)
		slices.Sort(timed)
		if len(cont) > 0 {
			d.contP50, d.contP99 = cont[len(cont)/2], cont[min(len(cont)-1, len(cont)*99/100)]
		}
		if len(timed) > 0 {
			d.timedMax = timed[len(timed)-1]
		}
		d.delivered, d.tables = len(arrived), env.n
		return d, nil
	}
	var err error
	if fr.before, err = round(1, 60*time.Second); err != nil {
		return fr, err
	}
	// Who read each job's change: more than one process means a fire ran twice.
	readers := map[string]float64{}
	for _, addr := range addrs {
		m, err := metricsOf(addr)
		if err != nil {
			return fr, err
		}
		for k, v := range m {
			if strings.HasPrefix(k, "read:") && v > 0 {
				readers[k]++
			}
		}
	}
	for _, c := range readers {
		if c > 1 {
			fr.readTwice++
		}
	}
	// Kill process 0 without a chance to release anything.
	last := func(p int) error {
		m, err := metricsOf(addrs[p])
		if err != nil {
			return err
		}
		fp := &fr.perProc[p]
		fp.committed, fp.empty, fp.failed = m["sluice_runs_total{committed}"], m["sluice_runs_total{empty}"], m["sluice_runs_total{failed}"]
		fp.locked, fp.unchanged, fp.runnin = m["sluice_fires_skipped_total{locked}"], m["sluice_fires_skipped_total{unchanged}"], m["sluice_fires_skipped_total{running}"]
		fp.rowsRead = m["sluice_rows_total{read}"]
		return nil
	}
	if err := last(0); err != nil {
		return fr, err
	}
	_ = srvs[0].cmd.Process.Signal(syscall.SIGKILL)
	<-srvs[0].done
	srvs[0] = nil
	fr.perProc[0].killed = true
	if fr.after, err = round(2, 90*time.Second); err != nil {
		return fr, err
	}
	for p := 1; p < procs; p++ {
		if err := last(p); err != nil {
			return fr, err
		}
	}
	return fr, nil
}

func printFleet(rs []fleetResult) {
	for _, r := range rs {
		fmt.Printf("\nfleet: %s, %d jobs (half continuous, half @every 10s) on %d `sluice serve` processes sharing the state database; process 0 killed (SIGKILL) after round 1\n", r.backend, r.jobs, r.procs)
		fmt.Printf("%-8s %10s %8s %8s %14s %16s %9s %7s\n", "process", "committed", "empty", "failed", "skipped locked", "skipped unchanged", "rows read", "conns")
		for p, fp := range r.perProc {
			name := strconv.Itoa(p)
			if fp.killed {
				name += " (killed)"
			}
			fmt.Printf("%-8s %10.0f %8.0f %8.0f %14.0f %16.0f %9.0f %7d\n", name, fp.committed, fp.empty, fp.failed, fp.locked, fp.unchanged, fp.rowsRead, fp.conns)
		}
		fmt.Printf("jobs whose one change was read by more than one process: %d of %d\n", r.readTwice, r.jobs)
		for _, x := range []struct {
			name string
			d    delivery
		}{{"round 1, all processes", r.before}, {"round 2, after the kill", r.after}} {
			fmt.Printf("%-24s continuous p50/p99 %s/%s, @every max %s, delivered %d/%d\n", x.name, ms(x.d.contP50), ms(x.d.contP99), x.d.timedMax.Round(10*time.Millisecond), x.d.delivered, x.d.tables)
		}
	}
}
