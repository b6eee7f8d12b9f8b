package plan

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/pos"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func ordersTable() cdc.Schema {
	return cdc.Schema{
		Columns: []cdc.Column{
			{Name: "id", Type: cdc.TypeInt, NotNull: true},
			{Name: "name", Type: cdc.TypeString},
			{Name: "amount", Type: cdc.Decimal(10, 2)},
			{Name: "status", Type: cdc.TypeString},
		},
		Key: []string{"id"},
	}
}

// formatPlans are hand-built plans covering what Format prints: pushdown and
// through-sluice execution, setup statements, schedules, filters or none,
// aliased expressions, merge keys, a target to create, stdout, warnings.
var formatPlans = []struct {
	name string
	plan *Plan
}{
	{
		name: "pushdown_merge",
		plan: &Plan{
			Job: &Job{
				Name: "orders_merge", File: "examples/orders/orders_merge.sql", Format: "sql",
				Schedule: "0 */5 * * *", ScheduleTZ: "Europe/Berlin",
				Pos: pos.Pos{File: "examples/orders/orders_merge.sql", Line: 1, Col: 1},
			},
			Setup: []string{
				"CREATE TABLE IF NOT EXISTS orders_replica (\n  id INT,\n  name STRING,\n  PRIMARY KEY (id)\n)",
				"ALTER TABLE orders   SET PROPERTIES ('change_tracking' = 'true')",
			},
			Source: SourceStage{
				Conn: "sqlite:/data/orders.db", Backend: "sqlite", Stream: "orders_merge_stream",
				Table: "orders", Mode: "STANDARD",
				Schema: cdc.StreamSchema(ordersTable()), TableSchema: ordersTable(),
			},
			Filter: &FilterStage{
				Text:    "`__change_type` IN ('INSERT', 'UPDATE_AFTER')",
				Dropped: []cdc.Op{cdc.OpUpdateBefore, cdc.OpDelete},
			},
			Project: []ProjectItem{
				{Name: "id", Text: "id", Type: cdc.TypeInt},
				{Name: "name", Text: "`name`", Type: cdc.TypeString},
				{Name: "amount_eur", Text: "amount * 0.92", Type: cdc.Decimal(14, 4)},
				{Name: "STATUS", Text: "status", Type: cdc.TypeString},
			},
			Sink: SinkStage{
				Conn: "sqlite:/data/orders.db", Backend: "sqlite", Table: "orders_replica",
				Mode: ModeMerge, Keys: []string{"id"}, TableExists: true,
			},
			Pushdown: true,
			Steps: []Step{
				{Where: "source", What: "begin one write transaction", SQL: "BEGIN IMMEDIATE"},
				{Where: "sink", What: "read the job's checkpoint"},
				{Where: "sink", What: "merge the rows", SQL: "\nMERGE INTO \"orders_replica\" AS t\nUSING (SELECT 1) AS s\n\tON t.id = s.id\n"},
				{Where: "source", What: "commit", SQL: "COMMIT"},
			},
			Warnings: []string{
				"the filter drops UPDATE_BEFORE, DELETE changes: a run consumes them for good (the offset moves past them)",
				"merge sink never sees DELETE changes: deleted source rows stay in the target",
			},
		},
	},
	{
		name: "through_sluice_append",
		plan: &Plan{
			Job: &Job{Name: "orders_copy", Format: "yaml"},
			Source: SourceStage{
				Conn: "postgres://sluice:xxxxx@db.example:5432/shop", Backend: "postgres", Stream: "orders_stream",
				Table: "orders", Mode: "APPEND_ONLY",
				Schema:      cdc.StreamSchema(cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "note", Type: cdc.Type{Kind: cdc.KindVarchar, Length: 20}}}}),
				TableSchema: cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "note", Type: cdc.Type{Kind: cdc.KindVarchar, Length: 20}}}},
			},
			Project: []ProjectItem{
				{Name: "id", Text: "`id`", Type: cdc.TypeBigInt},
				{Name: "note", Text: "`note`", Type: cdc.Type{Kind: cdc.KindVarchar, Length: 20}},
			},
			Sink: SinkStage{
				Conn: "sqlite:replica.db", Backend: "sqlite", Table: "orders_copy", Mode: ModeAppend,
			},
			Steps: []Step{
				{Where: "source", What: "read the pending changes of stream orders_stream up to a read point fixed now, in batches of 10000"},
				{Where: "sink", What: "insert the rows into orders_copy", SQL: "INSERT INTO \"orders_copy\" (\"id\", \"note\") VALUES (?, ?)"},
				{Where: "source", What: "after the sink commit: move stream orders_stream's offset to the read point"},
			},
			Warnings: []string{"not pushed down: source and sink are different databases; rows travel through sluice"},
		},
	},
	{
		name: "stdout_no_warnings",
		plan: &Plan{
			Job: &Job{Name: "peek", File: "peek.yaml"},
			Source: SourceStage{
				Conn: "sqlite:sluice.db", Backend: "sqlite", Stream: "s", Table: "t", Mode: "STANDARD",
				Schema:      cdc.StreamSchema(cdc.Schema{Columns: []cdc.Column{{Name: "k", Type: cdc.TypeString}}}),
				TableSchema: cdc.Schema{Columns: []cdc.Column{{Name: "k", Type: cdc.TypeString}}},
			},
			Filter: &FilterStage{Text: "k LIKE 'a%'"},
			Project: []ProjectItem{
				{Name: "k", Text: "k", Type: cdc.TypeString},
				{Name: "changed_at", Text: "`__commit_timestamp`", Type: cdc.TypeTimestamp},
			},
			Sink: SinkStage{Conn: "stdout:jsonl", Backend: "stdout", Table: "", Mode: ModeAppend},
		},
	},
}

func TestFormatGolden(t *testing.T) {
	for _, tt := range formatPlans {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Format(&b, tt.plan); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.name+".golden"), b.String())
		})
	}
}

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
		t.Fatalf("%v (run go test ./plan/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./plan/ -update and review the diff)\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestFormatWriteError(t *testing.T) {
	if err := Format(failWriter{}, formatPlans[0].plan); !errors.Is(err, errWrite) {
		t.Errorf("Format to a failing writer = %v, want %v", err, errWrite)
	}
}

func TestModes(t *testing.T) {
	want := []Mode{"append", "overwrite", "errorifexists", "ignore", "merge", "history"}
	if len(Modes) != len(want) {
		t.Fatalf("Modes = %q, want %q", Modes, want)
	}
	for i := range want {
		if Modes[i] != want[i] {
			t.Errorf("Modes[%d] = %q, want %q", i, Modes[i], want[i])
		}
	}
}
