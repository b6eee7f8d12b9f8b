package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sluicedata/sluice/internal/redact"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/scaffold"
)

func init() { register(newInitCmd) }

func newInitCmd(e *env) *cobra.Command {
	var conn string
	c := &cobra.Command{
		Use:   "init [flags] [DIR]",
		Short: "scaffold a project: a demo setup script, a YAML and a SQL job with their tests, a README",
		Long: "Create a sluice project in DIR (default: the current directory): setup.sql (a demo table\n" +
			"with change tracking and its streams), jobs/orders_copy.yaml and jobs/orders_events.sql with\n" +
			"a test each (sluice test jobs/), README.md and a .gitignore for SQLite databases, then print\n" +
			"the next commands to run.\n" +
			"Overwrites nothing: if any of the files exists, init writes none.",
		Args: checkArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return cmdInit(e, dir, conn)
		},
	}
	c.Flags().StringVar(&conn, "conn", "", "connection `URL` the printed commands and README use (default: sqlite:sluice.db in DIR)")
	return c
}

func cmdInit(e *env, dir, conn string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	shown := redact.Conn(conn)
	written, err := scaffold.Write(dir, scaffold.Options{Name: filepath.Base(abs), Conn: shown})
	if errors.Is(err, scaffold.ErrExists) {
		return configError{err}
	}
	for _, p := range written {
		fmt.Fprintf(e.stdout, "created %s\n", p)
	}
	if err != nil {
		return err
	}
	flag := ""
	if conn != "" {
		flag = " --conn '" + shown + "'"
	}
	fmt.Fprintln(e.stdout, "\nNext:")
	if filepath.Clean(dir) != "." {
		fmt.Fprintf(e.stdout, "  cd %s\n", dir)
	}
	fmt.Fprintf(e.stdout, "  sluice sql%s -f setup.sql   # the demo table, its change tracking and streams\n", flag)
	fmt.Fprintf(e.stdout, "  sluice run%s jobs/          # run each job once\n", flag)
	fmt.Fprintf(e.stdout, "  sluice serve%s jobs/        # run them on their schedules (Ctrl-C stops)\n", flag)
	if shown != conn {
		fmt.Fprintln(e.stdout, "(the password is masked above: give yours, or set $SLUICE_CONN and leave out --conn)")
	}
	return nil
}
