package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bashCompletionLib is the bash-completion package's library, which
// cobra's bash script needs (_get_comp_words_by_ref); .ci/run installs it.
const bashCompletionLib = "/usr/share/bash-completion/bash_completion"

// complete loads bash-completion and `sluice completion bash` in a real
// bash, completes line as if TAB were pressed at its end, and returns the
// candidates (COMPREPLY).
func complete(t *testing.T, line string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	if _, err := os.Stat(bashCompletionLib); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing in CI (.ci/run installs bash-completion): %v", bashCompletionLib, err)
		}
		t.Skipf("bash-completion is not installed (%v); apt-get install bash-completion", err)
	}
	script := `source ` + bashCompletionLib + `
source <(sluice completion bash) || exit 3
COMP_LINE="$LINE"
read -r -a COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_POINT=${#COMP_LINE}
__start_sluice
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.CommandContext(t.Context(), bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), asSluice+"=1", "LINE="+line, "PATH="+sluiceOnPath(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	// Outside an interactive completion, bash's compopt complains on
	// stderr; the candidates are on stdout.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s%s", line, err, out, stderr.String())
	}
	var got []string
	for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if s = strings.TrimSpace(s); s != "" {
			got = append(got, s)
		}
	}
	return got
}

// TestBashCompletion loads the bash completion script in bash and
// completes a verb, a flag, and a stream name read from --conn.
func TestBashCompletion(t *testing.T) {
	if got := complete(t, "sluice pre"); !slices.Equal(got, []string{"preview"}) {
		t.Errorf("sluice pre<TAB> = %q, want [preview]", got)
	}
	if got := complete(t, "sluice s"); !slices.Equal(got, []string{"schema", "serve", "sql", "status"}) {
		t.Errorf("sluice s<TAB> = %q, want [schema serve sql status]", got)
	}
	if got := complete(t, "sluice run --con"); !slices.Equal(got, []string{"--conn"}) {
		t.Errorf("sluice run --con<TAB> = %q, want [--conn]", got)
	}
	if got := complete(t, "sluice run --log-f"); !slices.Equal(got, []string{"--log-format"}) {
		t.Errorf("sluice run --log-f<TAB> = %q, want the global --log-format", got)
	}

	d := seededDB(t)
	mustSluice(t, "sql", "--conn", d.conn, "CREATE TABLE STREAM orders_audit ON TABLE orders WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
	// The walkthrough's setup made three streams; one more here.
	want := []string{"orders_audit", "orders_merge_stream", "orders_replica_stream", "orders_stream"}
	if got := complete(t, "sluice preview --conn "+d.conn+" orders_"); !slices.Equal(got, want) {
		t.Errorf("sluice preview --conn DB orders_<TAB> = %q, want %q", got, want)
	}
	// A SQLite file that does not exist completes nothing and is not
	// created.
	missing := filepath.Join(d.dir, "missing.db")
	if got := complete(t, "sluice preview --conn sqlite:"+missing+" o"); len(got) != 0 {
		t.Errorf("completion on a missing database = %q, want nothing", got)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("completion created %s", missing)
	}
}
