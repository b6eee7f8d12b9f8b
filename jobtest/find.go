package jobtest

import (
	"slices"

	"github.com/sluicedata/sluice/internal/walk"
)

// Find lists the test files of paths: a file is taken as is; a directory
// is walked recursively for *.test.yaml and *.test.yml files (entries
// starting with "." skipped). The result is sorted; a path that does not
// exist is an error.
func Find(paths []string) ([]string, error) {
	out, err := walk.Files(paths, IsTestFile)
	if err != nil {
		return nil, err
	}
	return slices.Compact(out), nil
}
