package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// jobFile is one job file's parse result.
type jobFile struct {
	path    string
	job     *plan.Job // nil when err is set
	err     error
	partial *plan.Job // with err: what did parse (dsl.ParseJobPartial), or nil
}

// check returns every error of the file that needs no database, all at
// once, as `sluice validate` reports them (and run and plan, which refuse
// such a file): its parse errors with the expressions' and the schedule's
// errors of what did parse (checkJob), or checkJob's errors of the job.
func (f jobFile) check() error {
	switch {
	case f.err == nil:
		return checkJob(f.job)
	case f.partial != nil:
		// Report the schedule's and expressions' errors with the
		// file's, not after those are fixed.
		var all pos.List
		all.Append(pos.Pos{}, f.err)
		all.Append(pos.Pos{}, checkJob(f.partial))
		return all.Err()
	}
	return f.err
}

// isJobFile reports whether name has a job file extension.
func isJobFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".sql":
		return true
	}
	return false
}

// jobPaths expands the arguments: files as given, directories to their job
// files (*.yaml, *.yml, *.sql; not recursive; dotfiles and Kubernetes
// ConfigMap "..data" entries skipped), sorted. fromDir tells which
// paths came from a directory.
func jobPaths(args []string) (out []string, fromDir map[string]bool, err error) {
	fromDir = map[string]bool{}
	for _, a := range args {
		st, err := os.Stat(a)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, configError{fmt.Errorf("%s: no such job file or directory", a)}
		}
		if err != nil {
			return nil, nil, configError{err}
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, nil, err
		}
		var files []string
		for _, ent := range ents {
			if !ent.IsDir() && isJobFile(ent.Name()) && !strings.HasPrefix(ent.Name(), ".") && !dsl.IsTestFile(ent.Name()) {
				files = append(files, filepath.Join(a, ent.Name()))
			}
		}
		if len(files) == 0 {
			return nil, nil, configError{fmt.Errorf("%s: no job files (*.yaml, *.yml, *.sql)", a)}
		}
		slices.Sort(files)
		for _, f := range files {
			fromDir[f] = true
		}
		out = append(out, files...)
	}
	return out, fromDir, nil
}

// isScript reports whether a parse error says only that a SQL file has no
// consuming statement: a script for `sluice sql -f`, not a job.
func isScript(err error) bool {
	var list pos.List
	if !errors.As(err, &list) || len(list) == 0 {
		return false
	}
	for _, e := range list {
		if !errors.Is(e, dsl.ErrNoConsuming) {
			return false
		}
	}
	return true
}

// loadJobs reads and parses every job file named by args; a file larger
// than maxSize bytes is an error of that file (read no further). In a
// directory, SQL scripts without a consuming statement (setup scripts) are
// skipped.
func loadJobs(args []string, maxSize int) ([]jobFile, error) {
	paths, fromDir, err := jobPaths(args)
	if err != nil {
		return nil, err
	}
	out := make([]jobFile, 0, len(paths))
	for _, p := range paths {
		src, err := readJobFile(p, maxSize)
		if err != nil {
			out = append(out, jobFile{path: p, err: err})
			continue
		}
		job, err := dsl.ParseJobPartialMax(p, src, maxSize)
		if err != nil && fromDir[p] && isScript(err) {
			continue
		}
		if err != nil {
			out = append(out, jobFile{path: p, err: err, partial: job})
			continue
		}
		out = append(out, jobFile{path: p, job: job})
	}
	return out, nil
}

// readJobFile reads the job file at path unless it is larger than maxSize
// bytes (dsl.CheckFileSize), in which case it is not read at all.
func readJobFile(path string, maxSize int) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := dsl.CheckFileSize(path, st.Size(), maxSize); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
