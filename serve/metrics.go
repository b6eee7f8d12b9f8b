package serve

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicedata/sluice/runner"
)

// Metrics are the Prometheus metrics of a Server, in their own registry
// (never the global default one). Metric names:
//
//	sluice_runs_total{job,result}                       counter; result = committed|empty|skipped|failed|cancelled
//	sluice_run_failures_total{job,kind}                 counter; kind = transient|permanent
//	sluice_rows_total{job,stage,change_type}            counter; stage = read|written
//	sluice_dead_letters_total{job}                      counter, rows the sink rejected and the run stored in the job's dead-letter table
//	sluice_run_duration_seconds{job}                    histogram
//	sluice_stream_lag_changes{job}                      gauge, changes pending in the stream
//	sluice_stream_lag_seconds{job}                      gauge, age of the oldest pending change
//	sluice_job_stopped{job}                             gauge, 1 after a permanent failure
//	sluice_job_running{job}                             gauge
//	sluice_fires_skipped_total{job,reason}              counter; reason = running|locked|unchanged
//	sluice_last_success_timestamp_seconds{job}          gauge, Unix time of the last good run
//	sluice_history_unrecorded_runs                      gauge, runs kept in memory until the history stores them
//	sluice_change_log_rows{database,table}              gauge, rows in a tracked table's change log
//	sluice_change_log_bytes{database,table}             gauge, bytes the change log occupies on disk
//
// plus the Go runtime and process collectors (CPU, memory, goroutines).
//
// Metrics implements runner.Observer. A Server reports every run to its
// Metrics itself (including runs that failed before the runner's Run, such
// as planning errors), so do not also install the same Metrics as
// runner.Runner.Observer: runs would count twice.
type Metrics struct {
	reg         *prometheus.Registry
	runs        *prometheus.CounterVec
	failures    *prometheus.CounterVec
	rows        *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	lagChanges  *prometheus.GaugeVec
	lagSeconds  *prometheus.GaugeVec
	stopped     *prometheus.GaugeVec
	running     *prometheus.GaugeVec
	skipped     *prometheus.CounterVec
	slotWaits   *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	unrecorded  prometheus.Gauge
	logRows     *prometheus.GaugeVec
	logBytes    *prometheus.GaugeVec
}

var _ runner.Observer = (*Metrics)(nil)

// NewMetrics creates the metrics in a new registry.
func NewMetrics() *Metrics {
	job := []string{"job"}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_runs_total", Help: "Runs of a job by result (committed, empty: committed with nothing pending, skipped, failed, cancelled).",
		}, []string{"job", "result"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_run_failures_total", Help: "Failed runs of a job by kind (transient: retried; permanent: job stopped).",
		}, []string{"job", "kind"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_rows_total", Help: "Changes read from the stream (stage=read) and rows applied at the sink (stage=written), by change type.",
		}, []string{"job", "stage", "change_type"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_dead_letters_total", Help: "Rows the sink rejected for their value and the run stored in the job's dead-letter table (sink: {dead_letter: TABLE}).",
		}, job),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sluice_run_duration_seconds", Help: "Duration of runs, failed or not.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12), // 5ms … ~5min
		}, job),
		lagChanges: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_stream_lag_changes", Help: "Changes pending in the job's stream (not yet consumed).",
		}, job),
		lagSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_stream_lag_seconds", Help: "Age of the oldest change pending in the job's stream; 0 when none.",
		}, job),
		stopped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_job_stopped", Help: "1 when the job was stopped by a permanent failure.",
		}, job),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_job_running", Help: "1 while a run of the job is in progress in this process.",
		}, job),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_fires_skipped_total", Help: "Scheduled fires skipped because the job was still running here (running), in another process (locked), or its source had nothing new since its last run (unchanged).",
		}, []string{"job", "reason"}),
		slotWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_run_slot_waits_total", Help: "Runs that waited for a run slot because --max-runs runs were under way in this process.",
		}, job),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_last_success_timestamp_seconds", Help: "Unix time at which the last successful run ended.",
		}, job),
		logRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_change_log_rows", Help: "Rows in the change log of a tracked table (what its streams have not consumed yet).",
		}, []string{"database", "table"}),
		logBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_change_log_bytes", Help: "Bytes the change log of a tracked table occupies on disk, as the database reports them.",
		}, []string{"database", "table"}),
		unrecorded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_history_unrecorded_runs", Help: "Runs kept in memory because the run history could not store them yet (retried until stored).",
		}),
	}
	m.reg.MustRegister(m.runs, m.failures, m.rows, m.deadLetters, m.duration, m.lagChanges, m.lagSeconds,
		m.stopped, m.running, m.skipped, m.slotWaits, m.lastSuccess, m.unrecorded, m.logRows, m.logBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry holding the metrics (to add more, or to
// gather them).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// RunDone records a finished run (runner.Observer): its result, rows and
// duration. err classifies it: nil → committed (or skipped when
// r.Skipped is set), context.Canceled → cancelled, IsTransient → a
// transient failure, else a permanent failure. r may be nil only when err
// is not; such a run counts under job "".
func (m *Metrics) RunDone(r *runner.Result, err error) {
	job := ""
	if r != nil {
		job = r.Job
	}
	m.observe(job, r, err, classify(err))
}

// observeEmpty records a committed run that found nothing pending:
// sluice_runs_total{result="empty"}, its duration, and the time of the
// last success.
func (m *Metrics) observeEmpty(job string, r *runner.Result) {
	m.runs.WithLabelValues(job, "empty").Inc()
	if r != nil && !r.Start.IsZero() && !r.End.IsZero() {
		m.duration.WithLabelValues(job).Observe(r.End.Sub(r.Start).Seconds())
		m.lastSuccess.WithLabelValues(job).Set(float64(r.End.UnixNano()) / 1e9)
	}
}

// observe records a run with a known outcome.
func (m *Metrics) observe(job string, r *runner.Result, err error, st Status) {
	switch st {
	case StatusTransient:
		m.runs.WithLabelValues(job, "failed").Inc()
		m.failures.WithLabelValues(job, "transient").Inc()
	case StatusFailed:
		m.runs.WithLabelValues(job, "failed").Inc()
		m.failures.WithLabelValues(job, "permanent").Inc()
	case StatusSkipped, StatusCancelled:
		m.runs.WithLabelValues(job, string(st)).Inc()
	default:
		m.runs.WithLabelValues(job, string(StatusCommitted)).Inc()
	}
	if r == nil {
		return
	}
	if !r.Start.IsZero() && !r.End.IsZero() {
		m.duration.WithLabelValues(job).Observe(r.End.Sub(r.Start).Seconds())
	}
	if err != nil {
		return // a failed run committed nothing
	}
	for op, n := range r.Stats.Read {
		m.rows.WithLabelValues(job, "read", op.String()).Add(float64(n))
	}
	for op, n := range r.Stats.Written {
		m.rows.WithLabelValues(job, "written", op.String()).Add(float64(n))
	}
	if r.Stats.DeadLettered > 0 {
		m.deadLetters.WithLabelValues(job).Add(float64(r.Stats.DeadLettered))
	}
	if !r.End.IsZero() {
		m.lastSuccess.WithLabelValues(job).Set(float64(r.End.UnixNano()) / 1e9)
	}
}

// classify maps a run error to its history status.
func classify(err error) Status {
	switch {
	case err == nil:
		return StatusCommitted
	case errors.Is(err, context.Canceled):
		return StatusCancelled
	case IsTransient(err):
		return StatusTransient
	}
	return StatusFailed
}

// SetLag sets the stream lag gauges of job.
func (m *Metrics) SetLag(job string, lag Lag) {
	m.lagChanges.WithLabelValues(job).Set(float64(lag.Changes))
	m.lagSeconds.WithLabelValues(job).Set(lag.Age.Seconds())
}

// SetLogSize sets the change log gauges of one tracked table.
func (m *Metrics) SetLogSize(sz runner.LogSize) {
	m.logRows.WithLabelValues(sz.Database, sz.Table).Set(float64(sz.Rows))
	m.logBytes.WithLabelValues(sz.Database, sz.Table).Set(float64(sz.Bytes))
}

// setUnrecorded sets the number of runs waiting for the history.
func (m *Metrics) setUnrecorded(n int) { m.unrecorded.Set(float64(n)) }

// SetStopped sets whether job is stopped by a permanent failure.
func (m *Metrics) SetStopped(job string, stopped bool) {
	v := 0.0
	if stopped {
		v = 1
	}
	m.stopped.WithLabelValues(job).Set(v)
}

// SetRunning sets whether a run of job is in progress.
func (m *Metrics) SetRunning(job string, running bool) {
	v := 0.0
	if running {
		v = 1
	}
	m.running.WithLabelValues(job).Set(v)
}

// FireSkipped counts a scheduled fire that did not run; reason is
// "running", "locked" or "unchanged" (Config.QuietMax).
func (m *Metrics) FireSkipped(job, reason string) {
	m.skipped.WithLabelValues(job, reason).Inc()
}

// RunSlotWait counts a run of job that waits for a run slot
// (Config.MaxRuns).
func (m *Metrics) RunSlotWait(job string) {
	m.slotWaits.WithLabelValues(job).Inc()
}

// Forget drops the gauges of a job that was removed by a reload (counters
// and histograms are kept: they are cumulative).
func (m *Metrics) Forget(job string) {
	for _, g := range []*prometheus.GaugeVec{m.lagChanges, m.lagSeconds, m.stopped, m.running} {
		g.DeleteLabelValues(job)
	}
}
