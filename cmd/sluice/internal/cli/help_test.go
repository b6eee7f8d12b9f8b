package cli_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestHelpGolden compares `sluice --help` and `sluice VERB --help` of every
// verb the usage lists with testdata/help/*.golden (-update rewrites them).
func TestHelpGolden(t *testing.T) {
	root := mustSluice(t, "--help")
	checkGolden(t, filepath.Join("testdata", "help", "sluice.golden"), root.stdout)
	for _, v := range verbsFromUsage(t, root.stdout) {
		t.Run(v, func(t *testing.T) {
			r := mustSluice(t, v, "--help")
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
			checkGolden(t, filepath.Join("testdata", "help", v+".golden"), r.stdout)
		})
	}
}

// TestVersionGolden compares `sluice version` and `sluice --version` with
// testdata/version.golden, the Go version and platform (which differ by
// machine) replaced by GOVERSION and PLATFORM. A test binary has no VCS
// stamp and its main module's version is (devel).
func TestVersionGolden(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := mustSluice(t, args...)
		got := strings.ReplaceAll(r.stdout, runtime.Version(), "GOVERSION")
		got = strings.ReplaceAll(got, runtime.GOOS+"/"+runtime.GOARCH, "PLATFORM")
		checkGolden(t, filepath.Join("testdata", "version.golden"), got)
	}
	if r := sluice(t, "version", "extra"); r.code != 2 {
		t.Errorf("sluice version extra: exit %d, want 2\n%v", r.code, r)
	}
}
