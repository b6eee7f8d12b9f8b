package jobtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
	"github.com/sluicedata/sluice/runner"
)

// Memory is the connection a case runs on: a fresh in-memory SQLite
// database per case (per Runner).
const Memory = "sqlite::memory:"

// Options tune Run.
type Options struct {
	// Conn is a PostgreSQL server for the cases of files that require
	// one; "" skips them. Their setup runs there as written: give a
	// scratch database.
	Conn string
	// Log receives the runs' events; nil discards them.
	Log *slog.Logger
}

// Result is the outcome of one case.
type Result struct {
	File string
	Case string
	Pos  pos.Pos
	// Skipped tells why the case did not run; "" when it ran.
	Skipped string
	// Err is a failure to set up or run the case (the job's error
	// included); nil when the runs completed.
	Err error
	// Diff lists the target's differences from expect, one line each
	// ("- {…}" expected and missing, "+ {…}" got and not expected), in
	// key order; empty when they are equal.
	Diff []string
}

// Passed reports whether the case ran and its target was as expected.
func (r Result) Passed() bool { return r.Skipped == "" && r.Err == nil && len(r.Diff) == 0 }

// Load reads and parses a test file.
func Load(path string) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Run runs every case of f, each on a fresh database, and returns their
// results in order.
func Run(ctx context.Context, f *File, opt Options) []Result {
	var out []Result
	for i := range f.Cases {
		out = append(out, runCase(ctx, f, &f.Cases[i], opt))
	}
	return out
}

func runCase(ctx context.Context, f *File, c *Case, opt Options) (res Result) {
	res = Result{File: f.Path, Case: c.Name, Pos: c.Pos}
	conn := Memory
	if f.Requires == "postgres" {
		if opt.Conn == "" {
			res.Skipped = "needs PostgreSQL (" + f.Reason + "); run with --conn postgres://…"
			return res
		}
		conn = opt.Conn
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &runner.Runner{Log: log, Conn: conn, LookupEnv: func(string) (string, bool) { return "", false }, Stdout: io.Discard, BatchSize: 1000}
	defer r.Close()
	job, err := loadJob(f)
	if err != nil {
		res.Err = err
		return res
	}
	cs := &caseRun{r: r, f: f, c: c, job: job}
	if err := cs.setup(ctx); err != nil {
		res.Err = err
		return res
	}
	for i, changes := range c.Runs {
		if err := cs.apply(ctx, changes); err != nil {
			res.Err = err
			return res
		}
		if _, err := r.RunJob(ctx, job); err != nil {
			res.Err = fmt.Errorf("run %d of job %s: %w", i+1, job.Name, err)
			return res
		}
	}
	res.Diff, res.Err = cs.compare(ctx)
	return res
}

// loadJob parses f's job file and points its connections at the test
// database.
func loadJob(f *File) (*plan.Job, error) {
	path := filepath.Join(filepath.Dir(f.Path), f.Job)
	src, err := os.ReadFile(path)
	if err != nil {
		if f.JobPos.IsValid() {
			return nil, pos.Errorf(f.JobPos, "%w: job file: %w", ErrBadFile, err)
		}
		return nil, fmt.Errorf("%s: %w: no job file %s beside it (name it with job:)", f.Path, ErrBadFile, path)
	}
	job, err := dsl.ParseJob(path, src)
	if err != nil {
		return nil, err
	}
	job.Conn, job.Sink.Conn = "", ""
	return job, nil
}

// caseRun is one case being run.
type caseRun struct {
	r    *runner.Runner
	f    *File
	c    *Case
	job  *plan.Job
	info *runner.StreamInfo
}

func (cs *caseRun) exec(ctx context.Context, at pos.Pos, text string) error {
	stmts, err := dsl.ParseStatementsAt(at, text)
	if err != nil {
		return err
	}
	b, err := cs.r.Backend(ctx, "")
	if err != nil {
		return err
	}
	ex := b.(runner.Executor)
	for _, st := range stmts {
		if _, err := ex.Exec(ctx, st); err != nil {
			return pos.Errorf(st.Position(), "%w: %w", ErrSetup, err)
		}
	}
	return nil
}

// setup runs the setup files and statements and the job's own setup,
// inserts the source rows as rows present before (the job's stream is
// moved past them) and the target rows.
func (cs *caseRun) setup(ctx context.Context) error {
	for _, name := range cs.f.SetupFiles {
		path := filepath.Join(filepath.Dir(cs.f.Path), name)
		text, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w: setup file: %w", cs.f.Path, ErrBadFile, err)
		}
		if err := cs.exec(ctx, pos.Pos{File: path, Line: 1, Col: 1}, string(text)); err != nil {
			return err
		}
	}
	if cs.f.Setup != "" {
		if err := cs.exec(ctx, cs.f.SetupPos, cs.f.Setup); err != nil {
			return err
		}
	}
	if err := cs.r.Setup(ctx, cs.job); err != nil {
		return err
	}
	b, err := cs.r.Backend(ctx, "")
	if err != nil {
		return err
	}
	src, ok := b.(runner.Source)
	if !ok {
		return fmt.Errorf("%w: %s is not a source", ErrSetup, b.Scheme())
	}
	if cs.info, err = src.Stream(ctx, cs.job.Source); err != nil {
		return pos.Errorf(cs.c.Pos, "%w: the job's stream: %w (create it in setup)", ErrSetup, err)
	}
	if len(cs.c.Source) > 0 {
		for _, row := range cs.c.Source {
			if err := cs.insert(ctx, cs.info.Table, cs.info.TableSchema, row); err != nil {
				return err
			}
		}
		// The rows were there before: the stream starts after them.
		rd, err := src.Changes(ctx, cs.info, cs.info.Offset, runner.ReadOptions{BatchSize: 1})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
		to := rd.ReadPoint()
		rd.Close()
		if err := src.Advance(ctx, cs.info, cs.info.Offset, to); err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
		cs.info.Offset = to
	}
	if cs.c.Target != nil {
		target, exists, err := cs.target(ctx)
		if err != nil {
			return err
		}
		if !exists {
			return pos.Errorf(cs.c.Pos, "%w: target rows are given but table %s does not exist; create it in setup", ErrSetup, cs.job.Sink.Table)
		}
		if err := cs.exec(ctx, cs.c.Pos, "DELETE FROM "+ident(cs.job.Sink.Table)); err != nil {
			return err
		}
		for _, row := range cs.c.Target {
			if err := cs.insert(ctx, cs.job.Sink.Table, target, row); err != nil {
				return err
			}
		}
	}
	return nil
}

// target describes the job's target table.
func (cs *caseRun) target(ctx context.Context) (cdc.Schema, bool, error) {
	b, err := cs.r.Backend(ctx, "")
	if err != nil {
		return cdc.Schema{}, false, err
	}
	sink, ok := b.(runner.Sink)
	if !ok {
		return cdc.Schema{}, false, fmt.Errorf("%w: %s is not a sink", ErrSetup, b.Scheme())
	}
	return sink.Target(ctx, cs.job.Sink.Table)
}

// apply makes one run's changes.
func (cs *caseRun) apply(ctx context.Context, changes []Change) error {
	for _, ch := range changes {
		if ch.SQL != "" {
			if err := cs.exec(ctx, ch.Pos, ch.SQL); err != nil {
				return err
			}
			continue
		}
		stmt, err := changeSQL(cs.info, ch)
		if err != nil {
			return err
		}
		if err := cs.exec(ctx, ch.Pos, stmt); err != nil {
			return err
		}
	}
	return nil
}

// insert inserts row into table (of schema s).
func (cs *caseRun) insert(ctx context.Context, table string, s cdc.Schema, row Row) error {
	cols, vals, err := literals(s, row)
	if err != nil {
		return err
	}
	return cs.exec(ctx, row.Pos, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", ident(table), strings.Join(cols, ", "), strings.Join(vals, ", ")))
}

// changeSQL makes a changed row a statement on the stream's table: INSERT
// inserts it; UPDATE_AFTER sets its other columns where its primary-key
// columns match; DELETE deletes where they match.
func changeSQL(info *runner.StreamInfo, ch Change) (string, error) {
	s := info.TableSchema
	cols, vals, err := literals(s, ch.Row)
	if err != nil {
		return "", err
	}
	t := ident(info.Table)
	if ch.Op == cdc.OpInsert {
		return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t, strings.Join(cols, ", "), strings.Join(vals, ", ")), nil
	}
	if len(s.Key) == 0 {
		return "", pos.Errorf(ch.Pos, "%w: a %s row needs a primary key on %s to find its row; write the statement instead", ErrBadFile, ch.Op, info.Table)
	}
	var where, set []string
	for _, k := range s.Key {
		i := indexFold(ch.Row.Cols, k)
		if i < 0 {
			return "", pos.Errorf(ch.Pos, "%w: a %s row needs the primary-key column %s", ErrBadFile, ch.Op, k)
		}
		where = append(where, cols[i]+" = "+vals[i])
	}
	for i := range cols {
		if !containsFold(s.Key, ch.Row.Cols[i]) {
			set = append(set, cols[i]+" = "+vals[i])
		}
	}
	if ch.Op == cdc.OpDelete {
		return fmt.Sprintf("DELETE FROM %s WHERE %s", t, strings.Join(where, " AND ")), nil
	}
	if len(set) == 0 {
		return "", pos.Errorf(ch.Pos, "%w: an UPDATE_AFTER row needs a column besides the primary key", ErrBadFile)
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE %s", t, strings.Join(set, ", "), strings.Join(where, " AND ")), nil
}

// literals renders a row's columns and values for a statement on a table
// of schema s: numbers and booleans as written (checked), everything else
// quoted.
func literals(s cdc.Schema, row Row) (cols, vals []string, err error) {
	for i, name := range row.Cols {
		c, ok := s.Column(name)
		if !ok {
			return nil, nil, pos.Errorf(row.Pos, "%w: no column %s (the table has %s)", ErrBadFile, name, strings.Join(s.Names(), ", "))
		}
		cols = append(cols, ident(c.Name))
		v := row.Vals[i]
		switch {
		case v == nil:
			vals = append(vals, "NULL")
		case c.Type.Kind.IsNumeric() || c.Type.Kind == cdc.KindBoolean:
			if _, err := cdc.Coerce(*v, c.Type); err != nil {
				return nil, nil, pos.Errorf(row.Pos, "%w: column %s: %q is not a %s", ErrBadFile, name, *v, c.Type)
			}
			vals = append(vals, *v)
		default:
			vals = append(vals, "'"+strings.ReplaceAll(strings.ReplaceAll(*v, `\`, `\\`), "'", "''")+"'")
		}
	}
	return cols, vals, nil
}

func ident(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func indexFold(names []string, n string) int {
	for i, x := range names {
		if strings.EqualFold(x, n) {
			return i
		}
	}
	return -1
}

func containsFold(names []string, n string) bool { return indexFold(names, n) >= 0 }

// Report writes a failed case: "FAIL file:line:col: case", then the error
// or the diff lines indented.
func Report(w io.Writer, r Result) {
	fmt.Fprintf(w, "FAIL %s: %s\n", r.Pos, r.Case)
	if r.Err != nil {
		fmt.Fprintf(w, "    %v\n", r.Err)
	}
	for _, l := range r.Diff {
		fmt.Fprintf(w, "    %s\n", l)
	}
}
