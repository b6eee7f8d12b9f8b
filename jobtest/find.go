package jobtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Find lists the test files of paths: a file is taken as is; a directory
// is walked recursively for *.test.yaml and *.test.yml files (entries
// starting with "." skipped). The result is sorted; a path that does not
// exist is an error.
func Find(paths []string) ([]string, error) {
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
			case !d.IsDir() && IsTestFile(path):
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
