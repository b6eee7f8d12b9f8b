package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
)

// completionTimeout bounds the database look-up of stream names when a
// shell completes an argument.
const completionTimeout = 2 * time.Second

// streamArgs completes the stream names of the connection in *conn (else
// $SLUICE_CONN, else the default) by SHOW TABLE STREAMS. It is cheap or
// nothing: a SQLite file that does not exist is not created, and a
// database that does not answer within completionTimeout completes
// nothing.
func streamArgs(e *env, conn *string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		names, err := streamNames(ctx, e, *conn)
		if err != nil {
			cobra.CompDebugln(fmt.Sprintf("stream names: %v", err), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// streamNames lists the table streams on conn.
func streamNames(ctx context.Context, e *env, conn string) ([]string, error) {
	r := newRunner(e, conn)
	defer r.Close()
	url, err := r.Resolve("")
	if err != nil {
		return nil, err
	}
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		path, _, _ = strings.Cut(strings.TrimPrefix(path, "//"), "?")
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
	}
	var names []string
	err = r.ExecScript(ctx, "", "<completion>", "SHOW TABLE STREAMS", func(_ dsl.Statement, rs *runner.ResultSet) error {
		if rs == nil {
			return nil
		}
		col := -1
		for i, c := range rs.Columns {
			if c.Name == "name" {
				col = i
			}
		}
		if col < 0 {
			return fmt.Errorf("SHOW TABLE STREAMS has no name column")
		}
		for _, row := range rs.Rows {
			if s, ok := row[col].(string); ok {
				names = append(names, s)
			}
		}
		return nil
	})
	return names, err
}
