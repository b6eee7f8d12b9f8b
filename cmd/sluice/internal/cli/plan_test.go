package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aliyun/aliyun-tablestore-go-sdk/tablestore"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/otsfake"
	"github.com/sluicedata/sluice/runner"
)

// exampleJobs lists the job files under examples/ (recursively) and jobs/,
// as absolute paths, and the files it left out with why. A SQL file without
// a consuming statement (dsl.ErrConsuming, and nothing else wrong) is a
// setup or changes script, not a job; any other parse error fails the test.
func exampleJobs(t *testing.T) (jobs []string, notJobs map[string]string) {
	t.Helper()
	notJobs = map[string]string{}
	for _, dir := range []string{"examples", "jobs"} {
		err := filepath.WalkDir(repoPath(dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".sql":
			default:
				return nil
			}
			if dsl.IsTestFile(p) {
				notJobs[p] = "a job test (sluice test), not a job"
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := dsl.ParseJob(p, src); err != nil {
				if onlyConsuming(err) {
					notJobs[p] = "a script, not a job (no consuming statement)"
					return nil
				}
				t.Errorf("%s does not parse: %v", p, err)
				return nil
			}
			jobs = append(jobs, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(jobs)
	return jobs, notJobs
}

// onlyConsuming reports whether every error in err is an ErrConsuming one.
func onlyConsuming(err error) bool {
	var m interface{ Unwrap() []error }
	if errors.As(err, &m) {
		for _, e := range m.Unwrap() {
			if !errors.Is(e, dsl.ErrConsuming) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, dsl.ErrConsuming)
}

// plansDir holds the golden plans (absolute: a test may change directory).
var plansDir = filepath.Join(repoRoot, "cmd", "sluice", "internal", "cli", "testdata", "plans")

// goldenName is the golden file of a job: its path from the repository
// root with '/' as '_', e.g. examples_orders_orders_append.yaml.golden.
func goldenName(path string) string {
	rel, err := filepath.Rel(repoRoot, path)
	if err != nil {
		panic(err)
	}
	return strings.ReplaceAll(filepath.ToSlash(rel), "/", "_") + ".golden"
}

// TestPlanGolden plans every example and checked-in job against a fresh
// database holding the orders walkthrough (examples/orders/setup.sql and
// changes.sql) and compares the output of `sluice plan` with
// testdata/plans/<name>.golden (-update rewrites them). Paths of the
// temporary directory and of the repository are normalized to $TMP and
// $REPO.
func TestPlanGolden(t *testing.T) {
	jobs, notJobs := exampleJobs(t)
	for p, why := range notJobs {
		t.Logf("not planned: %s: %s", p, why)
	}
	if len(jobs) == 0 {
		t.Fatal("no job files found under examples/ and jobs/")
	}
	var goldens []string
	for _, path := range jobs {
		name := goldenName(path)
		goldens = append(goldens, name)
		t.Run(strings.TrimSuffix(name, ".golden"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			job, err := dsl.ParseJob(path, src)
			if err != nil {
				t.Fatal(err)
			}
			if job.Conn == "${TABLESTORE_URL}" {
				planTablestore(t, path, name)
				return
			}
			// The test's database is a fresh SQLite file given by --conn; a job
			// that names its own connection (source or sink) needs that
			// database or server.
			if job.Conn != "" || job.Sink.Conn != "" {
				t.Skipf("not planned: the job connects to %q (sink %q), not to the test's SQLite database; "+
					"it can be planned only against that server (the CLI registers the schemes %s)",
					job.Conn, job.Sink.Conn, strings.Join(runner.Schemes(), ", "))
			}
			t.Parallel()
			d := seededDB(t)
			r := sluice(t, "plan", "--conn", d.conn, path)
			if r.code != 0 {
				t.Fatalf("sluice plan %s: %v", path, r)
			}
			out := strings.ReplaceAll(r.stdout, d.dir, "$TMP")
			out = strings.ReplaceAll(out, repoRoot, "$REPO")
			if strings.Contains(out, os.TempDir()) {
				t.Errorf("plan output still holds a temporary path after normalization:\n%s", out)
			}
			checkGolden(t, filepath.Join(plansDir, name), out)

			// Planning consumes nothing.
			if got, _ := previewChanges(t, d.conn, "orders_stream"); !slices.Equal(got, seedChanges) {
				t.Errorf("preview after plan: %q, want the seed changes", got)
			}
		})
	}

	// No stale golden files for jobs that are gone.
	files, err := filepath.Glob(filepath.Join(plansDir, "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.Contains(goldens, filepath.Base(f)) {
			t.Errorf("%s belongs to no job file under examples/ or jobs/; delete it", f)
		}
	}
}

// TestPlanSeedWarnings checks by hand what the golden files hold for the
// seed's append job: pushdown, the dropped change types, the masked
// connection.
func TestPlanSeedWarnings(t *testing.T) {
	d := seededDB(t)
	r := mustSluice(t, "plan", "--conn", d.conn, repoPath("examples/orders/orders_append.yaml"))
	for _, want := range []string{
		"job orders_append (" + repoPath("examples/orders/orders_append.yaml") + ")\n",
		"1. source   sqlite stream orders_stream on table orders (STANDARD) via " + d.conn + "\n",
		"2. filter   `__change_type` IN ('INSERT', 'UPDATE_AFTER')\n",
		"3. project  id INT, name STRING, amount DECIMAL(10,2), status STRING\n",
		"4. sink     sqlite orders_target mode append via " + d.conn + "\n",
		"execution: pushed down",
		"warning: the filter drops UPDATE_BEFORE, DELETE changes: a run consumes them for good",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan output does not contain %q:\n%s", want, r.stdout)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	d := seededDB(t)
	nostream := writeFile(t, d.dir, "nostream.yaml", "name: nostream\nsource: no_such_stream\nsink:\n  table: t\n")
	r := sluice(t, "plan", "--conn", d.conn, nostream)
	if r.code != 1 || !strings.Contains(r.stderr, nostream+":2:9: ") || !strings.Contains(r.stderr, "no_such_stream") {
		t.Errorf("plan with a missing stream: want exit 1 at %s:2:9; %v", nostream, r)
	}
	badType := writeFile(t, d.dir, "badfilter.yaml", "name: badfilter\nsource: orders_stream\nfilter: \"amount + 1\"\nsink:\n  table: t\n")
	r = sluice(t, "plan", "--conn", d.conn, badType)
	if r.code != 1 || !strings.Contains(r.stderr, badType+":3:") || !strings.Contains(r.stderr, "BOOLEAN") {
		t.Errorf("plan with a non-boolean filter: want exit 1 at %s:3:…; %v", badType, r)
	}
	// Several files: the good one is still printed.
	r = sluice(t, "plan", "--conn", d.conn, nostream, repoPath("examples/orders/orders_append.yaml"))
	if r.code != 1 || !strings.Contains(r.stdout, "job orders_append") {
		t.Errorf("plan bad+good: want exit 1 and the good plan; %v", r)
	}
}

// TestPlanMasksPassword: a connection's password never appears in a plan
// or an error, even when the connection fails.
func TestPlanMasksPassword(t *testing.T) {
	d := newDB(t)
	job := writeFile(t, d.dir, "pg.yaml", "name: pg\nconnection: postgres://alice:s3cr3t-pw@127.0.0.1:1/nodb?connect_timeout=1\nsource: s\nsink:\n  table: t\n")
	r := sluice(t, "plan", job)
	if r.code == 0 {
		t.Skipf("a server answered on 127.0.0.1:1: %v", r)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cr3t-pw") {
		t.Errorf("the password appears in the output:\n%v", r)
	}
}

// planTablestore plans a Tablestore job (connection ${TABLESTORE_URL},
// credentials from the environment, as examples/tablestore/README.md runs
// it) against the fake Tablestore of internal/otsfake holding the table
// "orders" with its Stream, as examples/tablestore/fakeots creates it. The
// test runs in a temporary directory, where the job's relative sink database
// is created; the fake's address is normalized to $OTS.
func planTablestore(t *testing.T, path, name string) {
	srv := otsfake.New(otsfake.WithShards(2))
	t.Cleanup(srv.Close)
	c := tablestore.NewClientWithConfig(srv.URL(), srv.Instance(), srv.AccessKeyID(), srv.AccessKeySecret(), "", nil)
	meta := &tablestore.TableMeta{TableName: "orders"}
	meta.AddPrimaryKeyColumn("id", tablestore.PrimaryKeyType_INTEGER)
	if _, err := c.CreateTable(&tablestore.CreateTableRequest{
		TableMeta:          meta,
		TableOption:        &tablestore.TableOption{TimeToAlive: -1, MaxVersion: 1},
		ReservedThroughput: &tablestore.ReservedThroughput{},
		StreamSpec:         &tablestore.StreamSpecification{EnableStream: true, ExpirationTime: 24},
	}); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL(), "http://")
	t.Setenv("TABLESTORE_URL", "tablestore+http://"+host+"?instance="+srv.Instance())
	t.Setenv("TABLESTORE_ACCESS_KEY_ID", srv.AccessKeyID())
	t.Setenv("TABLESTORE_ACCESS_KEY_SECRET", srv.AccessKeySecret())
	dir := t.TempDir()
	t.Chdir(dir)

	// Plan a copy in the temporary directory: the job's relative sink
	// database resolves next to the job file, and must not land in the
	// repository.
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	job := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(job, src, 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, "plan", job)
	if r.code != 0 {
		t.Fatalf("sluice plan %s: %v", path, r)
	}
	out := strings.ReplaceAll(r.stdout, host, "$OTS")
	out = strings.ReplaceAll(out, repoRoot, "$REPO")
	out = strings.ReplaceAll(out, dir, "$TMP")
	if strings.Contains(r.stdout+r.stderr, srv.AccessKeySecret()) {
		t.Errorf("the access key secret appears in the output:\n%v", r)
	}
	checkGolden(t, filepath.Join(plansDir, name), out)
}
