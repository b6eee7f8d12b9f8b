package dsl

import (
	"path/filepath"
	"strings"
)

// IsTestFile reports whether name is a job test file (*.test.yaml or
// *.test.yml, package jobtest): not a job, though it ends in .yaml, so
// job loaders skip it in directories.
func IsTestFile(name string) bool {
	n := strings.ToLower(filepath.Base(name))
	return strings.HasSuffix(n, ".test.yaml") || strings.HasSuffix(n, ".test.yml")
}
