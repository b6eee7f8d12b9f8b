// Package walk lists the files named by command-line paths, as the job
// loaders (serve.JobFiles) and the job-test finder (jobtest.Find) take
// them.
package walk

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Files lists the files of paths: a path naming a file is taken as is
// (whatever keep says); a directory is walked recursively for the files
// that keep accepts (keep gets the file's path), skipping entries whose
// name starts with "." below it (editor swap files, and the "..data"
// links of a Kubernetes ConfigMap volume, whose files also appear as
// top-level symlinks). The result is sorted. A path that does not exist,
// or a directory that cannot be read, is an error (the *fs.PathError).
func Files(paths []string, keep func(path string) bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case path != p && strings.HasPrefix(d.Name(), "."):
				if d.IsDir() {
					return filepath.SkipDir
				}
			case !d.IsDir() && keep(path):
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}
