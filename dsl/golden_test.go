package dsl

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/pos"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// checkGolden compares got with the golden file path, or rewrites it with
// -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./dsl/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./dsl/ -update and review the diff)\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}

// renderErr renders an error list one error per line, checking that every
// error is a positioned *pos.Error wrapping a sentinel of this package.
func renderErr(t *testing.T, err error) string {
	t.Helper()
	var list pos.List
	if !errors.As(err, &list) {
		t.Fatalf("error is %T, want pos.List: %v", err, err)
	}
	for _, e := range list {
		if !e.Pos.IsValid() {
			t.Errorf("error without position: %v", e)
		}
		if !wrapsSentinel(e) {
			t.Errorf("error wraps no sentinel: %v", e)
		}
	}
	return err.Error() + "\n"
}

var sentinels = []error{ErrSyntax, ErrUnknownKey, ErrMissingKey, ErrDuplicate, ErrBadValue, ErrNotSupported, ErrConsuming, ErrMissingEnv, ErrTooLarge, ErrBadEncoding}

func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestGoldenJobs parses every job file under testdata/jobs (which must
// parse) and testdata/badjobs (which must fail) and compares the rendered
// job or errors with the .golden file beside it.
func TestGoldenJobs(t *testing.T) {
	for _, dir := range []string{"jobs", "badjobs"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, ".golden") {
				continue
			}
			t.Run(path, func(t *testing.T) {
				src, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.ToSlash(path)
				job, err := ParseJob(name, src)
				var got string
				switch {
				case dir == "jobs" && err != nil:
					t.Fatalf("unexpected error:\n%v", err)
				case dir == "badjobs" && err == nil:
					t.Fatalf("no error; parsed:\n%s", renderJob(job))
				case err != nil:
					got = renderErr(t, err)
				default:
					got = renderJob(job)
				}
				checkGolden(t, path+".golden", got)
			})
		}
	}
}

// TestGoldenStatements parses the scripts under testdata/statements: each
// statement rendered, or the errors of a script that fails.
func TestGoldenStatements(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "statements", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sts, err := ParseStatements(filepath.ToSlash(path), string(src))
			var b strings.Builder
			if err != nil {
				b.WriteString(renderErr(t, err))
			}
			for _, st := range sts {
				b.WriteString(renderStatement(st) + "\n")
			}
			checkGolden(t, path+".golden", b.String())
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
