// Package cli implements the sluice command line on cobra
// (github.com/spf13/cobra): one file per verb (cmd_VERB.go), each
// registering a constructor of its *cobra.Command from an init function.
// Verbs only parse arguments and call the packages below (runner, serve,
// dsl, …). cmd/sluice only calls Main.
//
// Exit codes: 0 success; 1 a job or statement failed; 2 a usage or
// configuration error (unknown verb or flag, wrong arguments, a bad flag
// value, a job file that does not parse or validate).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"

	// Backends register themselves by connection scheme.
	_ "github.com/sluicedata/sluice/sinks/stdout"
	_ "github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite"
	_ "github.com/sluicedata/sluice/sources/tablestore"
)

// Exit codes of Main.
const (
	ExitOK     = 0 // success
	ExitFailed = 1 // a job or statement failed
	ExitUsage  = 2 // a usage or configuration error
)

// env is what a verb gets: its streams, the process environment, the
// global flags and a logger (set before the verb runs).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	lookup         func(string) (string, bool)

	logFormat, logLevel string // global flags
	maxJobSize          int    // global flag --max-job-size
}

// verbFunc builds one verb's command for one call of Main: commands hold
// their flags' values, so every call gets its own tree.
type verbFunc func(e *env) *cobra.Command

var verbs []verbFunc

// register adds a verb. Verbs register from init functions only, so Main
// never modifies the slice and concurrent calls of Main (tests) do not
// race.
func register(f verbFunc) { verbs = append(verbs, f) }

// errUsage marks a command-line mistake: exit code 2, with a pointer to
// the verb's --help.
var errUsage = errors.New("usage")

// errFailed marks a verb that already reported its failures: exit code 1
// with nothing more to print.
var errFailed = errors.New("failed")

// errInvalid marks a verb that already reported invalid job files: exit
// code 2 with nothing more to print.
var errInvalid = errors.New("invalid job files")

// configError is a job file or setting that cannot be used: exit code 2,
// printed as is.
type configError struct{ err error }

func (c configError) Error() string { return c.err.Error() }
func (c configError) Unwrap() error { return c.err }

// usageErr returns an error with exit code 2 whose text is the formatted
// message.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// defaultLevelKey is the annotation by which a verb sets its default log
// level (serve logs at info; the others at warn).
const defaultLevelKey = "sluice-default-log-level"

// Main runs the command line args (without the program name) and returns
// the process exit code (ExitOK, ExitFailed or ExitUsage).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stderr = dedupLines{stderr}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, lookup: os.LookupEnv}
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root := newRoot(e)
	if len(args) == 0 {
		root.SetOut(stderr)
		_ = root.Usage()
		return ExitUsage
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(e, cmd, err)
}

// exitCode reports err (unless the verb already did) and maps it to an
// exit code.
func exitCode(e *env, cmd *cobra.Command, err error) int {
	name := "sluice"
	if cmd != nil && cmd.HasParent() {
		name = cmd.CommandPath()
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errFailed):
		return ExitFailed
	case errors.Is(err, errInvalid):
		return ExitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's message: unknown command "x" for "sluice" (and
		// suggestions).
		fmt.Fprintf(e.stderr, "sluice: %v\n\n", err)
		cmd.SetOut(e.stderr)
		_ = cmd.Usage()
		return ExitUsage
	case errors.As(err, new(configError)), errors.As(err, new(*runner.ConnError)):
		fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
		return ExitUsage
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return ExitUsage
	default:
		fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
		return ExitFailed
	}
}

// newRoot builds the command tree: the root with its global flags and
// every registered verb.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "declarative change-data pipelines over table streams",
		Long: "sluice — declarative change-data pipelines over table streams\n\n" +
			"Connections: --conn URL, else $SLUICE_CONN, else " + runner.DefaultConn + ".\n" +
			"Known schemes: " + strings.Join(runner.Schemes(), ", ") + ".",
		Version:       versionLine(readBuildInfo()),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Args: unknown verbs are usage errors (cobra's legacy check).
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return e.setup(cmd) },
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	root.SetUsageTemplate(usageTemplate)
	root.SetHelpTemplate(`{{.UsageString}}`)
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&e.logFormat, "log-format", "text", "log `FORMAT`: text or json")
	pf.StringVar(&e.logLevel, "log-level", "", "log `LEVEL`: debug, info, warn or error (default: $SLUICE_LOG, else warn; info for serve)")
	pf.IntVar(&e.maxJobSize, "max-job-size", dsl.DefaultMaxFileSize, "refuse job files larger than `BYTES`")
	for _, f := range verbs {
		root.AddCommand(f(e))
	}
	root.Flags().BoolP("version", "v", false, "print the version and exit")
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "print the help of a command"
		case "completion":
			c.Short = "print a shell completion script (bash, zsh, fish, powershell)"
		}
	}
	helpFlags(root)
	return root
}

// helpFlags gives every command its --help flag, worded as the others.
func helpFlags(c *cobra.Command) {
	c.Flags().BoolP("help", "h", false, "print this help")
	for _, sub := range c.Commands() {
		helpFlags(sub)
	}
}

// setup builds the logger from the global flags (--log-level, else
// $SLUICE_LOG, else the verb's default level).
func (e *env) setup(cmd *cobra.Command) error {
	level := slog.LevelWarn
	if l, ok := cmd.Annotations[defaultLevelKey]; ok {
		_ = level.UnmarshalText([]byte(l))
	}
	if v, ok := e.lookup("SLUICE_LOG"); ok {
		_ = level.UnmarshalText([]byte(v))
	}
	if e.logLevel != "" {
		if err := level.UnmarshalText([]byte(e.logLevel)); err != nil {
			return usageErr("--log-level is debug, info, warn or error, not %q", e.logLevel)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch e.logFormat {
	case "text":
		e.log = slog.New(slog.NewTextHandler(e.stderr, opts))
	case "json":
		e.log = slog.New(slog.NewJSONHandler(e.stderr, opts))
	default:
		return usageErr("--log-format is text or json, not %q", e.logFormat)
	}
	return nil
}

// usageTemplate is every command's --help: the root lists the verbs, a
// verb shows its usage line, description and flags.
const usageTemplate = `{{if not .HasParent}}{{.Long}}

Usage:
  sluice <command> [flags] [arguments]

Commands:{{range .Commands}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}

Exit codes: 0 ok; 1 a job or statement failed; 2 a usage or configuration error.
Run 'sluice <command> --help' for a command's flags.
{{else}}Usage: {{.UseLine}}

{{with .Long}}{{.}}{{else}}{{.Short}}{{end}}
{{if .HasAvailableLocalFlags}}
Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}
{{end}}{{if .HasAvailableInheritedFlags}}
Global flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}
{{end}}{{if .HasExample}}
Examples:
{{.Example}}
{{end}}{{if .HasAvailableSubCommands}}
Commands:{{range .Commands}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding}} {{.Short}}{{end}}{{end}}
{{end}}{{end}}`

// newRunner builds a runner with the connection flag and the env.
func newRunner(e *env, conn string) *runner.Runner {
	return &runner.Runner{Log: e.log, Conn: conn, LookupEnv: e.lookup, Stdout: e.stdout}
}

// checkArgs wraps a cobra argument check so that its error is a usage
// error (exit code 2).
func checkArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageErr("%v", err)
		}
		return nil
	}
}

// jobArgs completes job files and directories (for cobra's
// ValidArgsFunction).
func jobArgs(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml", "sql"}, cobra.ShellCompDirectiveFilterFileExt
}
