package main

import (
	"fmt"

	"github.com/sluicedata/sluice/bench/internal/machine"
)

func rate(r run) float64 { return float64(r.res.Rows) / r.res.Seconds }

// reportRuns prints one path's contenders (median and min–max of seconds,
// rows/s, CPU seconds, peak RSS, ratio to base) and returns its summary:
// sluice against base.
func reportRuns(path string, contenders []string, base, sluice string, runs map[string][]run, names map[string]string) summary {
	fmt.Printf("\n%s — %d rounds, load average now %s\n", path, len(runs[base]), machine.LoadAvg())
	fmt.Printf("  %-56s %22s %10s %8s %8s %20s\n", "contender", "seconds med (min–max)", "rows/s", "CPU s", "RSS MB", "× "+base+" med (min–max)")
	for _, m := range contenders {
		var secs, cpu, rss []float64
		for _, r := range runs[m] {
			secs = append(secs, r.res.Seconds)
			cpu = append(cpu, r.cpu)
			rss = append(rss, float64(r.rss)/1024)
		}
		med, lo, hi := stats(secs)
		c, _, _ := stats(cpu)
		_, _, peak := stats(rss)
		rs := ratioSummary(path, runs[m], runs[base], base)
		var rows int64
		if len(runs[m]) > 0 {
			rows = runs[m][0].res.Rows
		}
		rm, rlo, rhi := stats(rs.ratios)
		fmt.Printf("  %-56s %7.2f (%5.2f–%5.2f) %10.0f %8.2f %8.0f %8.2f (%.2f–%.2f)\n", names[m], med, lo, hi, float64(rows)/med, c, peak, rm, rlo, rhi)
	}
	return ratioSummary(path, runs[sluice], runs[base], names[base])
}

// ratioSummary compares a with b round by round (rows/s of a over b's).
func ratioSummary(path string, a, b []run, baseline string) summary {
	s := summary{path: path, baseline: baseline}
	for i := range min(len(a), len(b)) {
		s.ratios = append(s.ratios, rate(a[i])/rate(b[i]))
		s.rssMB = max(s.rssMB, a[i].rss/1024)
	}
	return s
}
