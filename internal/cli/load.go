package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
)

// jobFile is one job file's parse result.
type jobFile struct {
	path string
	job  *plan.Job
	err  error
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
// files (*.yaml, *.yml, *.sql; not recursive), sorted.
func jobPaths(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, ent := range ents {
			if !ent.IsDir() && isJobFile(ent.Name()) {
				files = append(files, filepath.Join(a, ent.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no job files (*.yaml, *.yml, *.sql)", a)
		}
		slices.Sort(files)
		out = append(out, files...)
	}
	return out, nil
}

// loadJobs reads and parses every job file named by args.
func loadJobs(args []string) ([]jobFile, error) {
	paths, err := jobPaths(args)
	if err != nil {
		return nil, err
	}
	out := make([]jobFile, 0, len(paths))
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			out = append(out, jobFile{path: p, err: err})
			continue
		}
		job, err := dsl.ParseJob(p, src)
		out = append(out, jobFile{path: p, job: job, err: err})
	}
	return out, nil
}
