package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDeadLetterVerb: `sluice run` reports the dead-lettered rows,
// `sluice dead-letter` lists them (table and JSON, the row's values as
// written at the source: the DECIMAL as a string with its digits),
// --replay leaves a row the target still refuses and exits 1, writes it
// once the target takes it and exits 0, --purge drops one; a job
// without a dead-letter table is a configuration error.
func TestDeadLetterVerb(t *testing.T) {
	d := newDB(t)
	mustSluice(t, "sql", "--conn", d.conn, `CREATE TABLE src (id INT, amount DECIMAL(10,2), PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
INSERT INTO src VALUES (1, 1.50), (2, 12345.67), (3, 3.00);`)
	job := writeFile(t, d.dir, "dl.yaml", "name: dl\nconnection: "+d.conn+"\nsource: s\nsink: {table: tgt, mode: merge, keys: [id], connection: sqlite:"+d.dir+"/sink.db, dead_letter: rejects, on_schema_change: ignore}\n")
	mustSluice(t, "sql", "--conn", "sqlite:"+d.dir+"/sink.db", "CREATE TABLE tgt (id INT, amount DECIMAL(4,2), PRIMARY KEY (id))")
	r := mustSluice(t, "run", job)
	if !strings.Contains(r.stdout, "dl: read 3 (INSERT 3); wrote 2 (INSERT 2); dead-lettered 1;") {
		t.Errorf("run output:\n%s", r.stdout)
	}
	r = mustSluice(t, "dead-letter", "--format", "json", job)
	var out struct {
		DeadLetters []struct {
			Key        map[string]any `json:"key"`
			ChangeType string         `json:"change_type"`
			Row        map[string]any `json:"row"`
			Error      string         `json:"error"`
		} `json:"dead_letters"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(out.DeadLetters) != 1 || out.DeadLetters[0].Key["id"] != 2.0 || out.DeadLetters[0].Row["amount"] != "12345.67" ||
		out.DeadLetters[0].ChangeType != "INSERT" || !strings.Contains(out.DeadLetters[0].Error, "amount") {
		t.Errorf("dead letters: %s", r.stdout)
	}
	tb := parseTable(t, mustSluice(t, "dead-letter", "--wide", job).stdout)
	if got := tb.project(t, "key", "change_type"); len(got) != 1 || !strings.Contains(got[0], `{"id":2}`) {
		t.Errorf("table listing: %v", got)
	}
	// A replay that leaves rows still rejected exits 1 (a fresh user's
	// script took exit 0 for done), in both formats.
	r = sluice(t, "dead-letter", "--replay", job)
	if r.code != 1 || !strings.Contains(r.stdout, "replayed 0 dead letters") || !strings.Contains(r.stdout, "1 still rejected") {
		t.Errorf("replay with a row still rejected: want exit 1; %v", r)
	}
	r = sluice(t, "dead-letter", "--replay", "--format", "json", job)
	if r.code != 1 || !strings.Contains(r.stdout, `"remaining": 1`) {
		t.Errorf("replay --format json with a row still rejected: want exit 1; %v", r)
	}
	// Once the target takes the row, the replay writes it and exits 0.
	mustSluice(t, "sql", "--conn", "sqlite:"+d.dir+"/sink.db", "DROP TABLE tgt; CREATE TABLE tgt (id INT, amount DECIMAL(7,2), PRIMARY KEY (id))")
	r = sluice(t, "dead-letter", "--replay", job)
	if r.code != 0 || !strings.Contains(r.stdout, "replayed 1 dead letters") || !strings.Contains(r.stdout, "0 still rejected") {
		t.Errorf("replay of a row the target now takes: want exit 0; %v", r)
	}
	mustSluice(t, "sql", "--conn", d.conn, "INSERT INTO src VALUES (4, 123456.00)")
	if r := mustSluice(t, "run", job); !strings.Contains(r.stdout, "dead-lettered 1;") {
		t.Errorf("run output:\n%s", r.stdout)
	}
	r = mustSluice(t, "dead-letter", "--purge", job)
	if !strings.Contains(r.stdout, "purged 1 dead letters from rejects") {
		t.Errorf("purge output: %s", r.stdout)
	}
	if r := mustSluice(t, "dead-letter", "--format", "json", job); !strings.Contains(r.stdout, `"dead_letters": []`) {
		t.Errorf("after the purge: %s", r.stdout)
	}
	plain := writeFile(t, d.dir, "plain.yaml", "name: plain\nconnection: "+d.conn+"\nsource: s\nsink: {table: tgt2}\n")
	if r := sluice(t, "dead-letter", plain); r.code != 2 || !strings.Contains(r.stderr, "no dead-letter table") {
		t.Errorf("job without dead_letter: %v", r)
	}
}
