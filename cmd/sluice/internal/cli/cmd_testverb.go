package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/jobtest"
)

// The verb test lives in cmd_testverb.go: cmd_test.go would be a Go test
// file.
func init() { register(newTestCmd) }

func newTestCmd(e *env) *cobra.Command {
	var conn string
	c := &cobra.Command{
		Use:   "test [flags] [PATH…]",
		Short: "run the job tests (*.test.yaml) beside job files",
		Long: "Run job tests: each *.test.yaml file beside a job gives the source rows before, the changes of\n" +
			"one or more runs and the target rows expected (see docs/testing.md). Each case runs the job's own\n" +
			"plan on a fresh in-memory SQLite database. A failing case prints a diff of the target by key\n" +
			"(- expected, + got). PATH is a test file or a directory searched recursively (default: .).\n" +
			"Exit code 1 if a case failed, 2 if a test file is malformed.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdTest(cmd.Context(), e, conn, args)
		},
	}
	c.Flags().StringVar(&conn, "conn", "", "PostgreSQL `URL` (a scratch database) for test files that require postgres; without it they are skipped")
	return c
}

func cmdTest(ctx context.Context, e *env, conn string, paths []string) error {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	paths, err := testFilesOf(paths)
	if err != nil {
		return err
	}
	files, err := jobtest.Find(paths)
	if err != nil {
		return usageErr("%v", err)
	}
	t0 := time.Now()
	var passed, failed, skipped, bad int
	for _, path := range files {
		f, err := jobtest.Load(path)
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			bad++
			continue
		}
		malformed := false
		for _, r := range jobtest.Run(ctx, f, jobtest.Options{Conn: conn, Log: e.log}) {
			switch {
			case errors.Is(r.Err, jobtest.ErrBadFile):
				// The test file's own mistake, found as the case ran
				// (expected rows, change rows): malformed, exit 2.
				fmt.Fprintln(e.stderr, r.Err)
				malformed = true
			case r.Skipped != "":
				skipped++
				fmt.Fprintf(e.stdout, "SKIP %s: %s: %s\n", r.Pos, r.Case, r.Skipped)
			case r.Passed():
				passed++
			default:
				failed++
				jobtest.Report(e.stdout, r)
			}
		}
		if malformed {
			bad++
		}
	}
	summary := fmt.Sprintf("%d passed, %d failed, %d skipped in %s (%s)", passed, failed, skipped, plural(int64(len(files)), "file"), time.Since(t0).Round(time.Millisecond))
	switch {
	case bad > 0:
		fmt.Fprintf(e.stderr, "%s; %s malformed\n", summary, plural(int64(bad), "test file"))
		return errInvalid
	case failed > 0:
		fmt.Fprintf(e.stdout, "FAIL %s\n", summary)
		return errFailed
	}
	fmt.Fprintf(e.stdout, "ok %s\n", summary)
	return nil
}

// testFilesOf replaces each job file in paths (a .yaml, .yml or .sql file
// that is not a test file) by its test file beside it, named after it
// (orders_append.yaml → orders_append.test.yaml, or .test.yml), as
// docs/testing.md names them; a job without one is a usage error saying
// what to pass. Directories and test files stay as they are.
func testFilesOf(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		ext := strings.ToLower(filepath.Ext(p))
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || dsl.IsTestFile(p) || (ext != ".yaml" && ext != ".yml" && ext != ".sql") {
			out = append(out, p)
			continue
		}
		base := strings.TrimSuffix(p, filepath.Ext(p))
		found := ""
		for _, cand := range []string{base + ".test.yaml", base + ".test.yml"} {
			if _, err := os.Stat(cand); err == nil {
				found = cand
				break
			}
		}
		if found == "" {
			return nil, usageErr("%s is a job, not a test file: its tests go in %s beside it (see docs/testing.md); pass that file, or a directory to run every test in it", p, filepath.Base(base)+".test.yaml")
		}
		out = append(out, found)
	}
	return out, nil
}
