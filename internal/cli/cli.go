// Package cli implements the sluice command line: one function per verb,
// each with its own flag set and --help. cmd/sluice only calls Main.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sluicedata/sluice/runner"

	// Backends register themselves by connection scheme.
	_ "github.com/sluicedata/sluice/sinks/stdout"
	_ "github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite"
	_ "github.com/sluicedata/sluice/sources/tablestore"
)

// env is what a verb gets: its streams, the process environment and a
// logger.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	lookup         func(string) (string, bool)
}

type verb struct {
	name  string
	usage string // arguments after the verb
	short string
	run   func(ctx context.Context, e *env, args []string) error
}

var verbs []verb

// register adds a verb, keeping verbs sorted by name. Verbs register from
// init functions only, so Main never modifies the slice and concurrent calls
// of Main (tests) do not race.
func register(v verb) {
	verbs = append(verbs, v)
	sort.Slice(verbs, func(i, j int) bool { return verbs[i].name < verbs[j].name })
}

// errUsage marks a command-line mistake: exit code 2.
var errUsage = errors.New("usage")

// errFailed marks a verb that already reported its failures: exit code 1
// with nothing more to print.
var errFailed = errors.New("failed")

// Main runs the command line args (without the program name) and returns
// the process exit code: 0 success, 1 a failure (a job failed, a statement
// erred), 2 a usage error.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, lookup: os.LookupEnv}
	level := slog.LevelWarn
	if v, ok := os.LookupEnv("SLUICE_LOG"); ok {
		_ = level.UnmarshalText([]byte(v))
	}
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, v := range verbs {
		if v.name == args[0] {
			err := v.run(ctx, e, args[1:])
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				fmt.Fprintf(stderr, "sluice %s: %v\n", v.name, err)
				return 2
			case errors.Is(err, errFailed):
				return 1
			default:
				fmt.Fprintf(stderr, "sluice %s: %v\n", v.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "sluice — declarative change-data pipelines over table streams")
	fmt.Fprintln(w, "\nUsage:\n  sluice <command> [flags] [arguments]\n\nCommands:")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.short)
	}
	fmt.Fprintln(w, "\nConnections: --conn URL, else $SLUICE_CONN, else "+runner.DefaultConn+".")
	fmt.Fprintln(w, "Known schemes: "+strings.Join(runner.Schemes(), ", "))
	fmt.Fprintln(w, "Run 'sluice <command> --help' for a command's flags.")
}

// helpOuts maps a verb's flag set to standard output, for --help.
var helpOuts sync.Map

func helpOut(fs *flag.FlagSet) io.Writer {
	w, _ := helpOuts.Load(fs)
	return w.(io.Writer)
}

// flags returns a flag set for verb v whose --help prints the verb's usage
// (to standard output; flag errors go to standard error).
func flags(e *env, v string) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+v, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	helpOuts.Store(fs, e.stdout)
	fs.Usage = func() {
		for _, vb := range verbs {
			if vb.name == v {
				fmt.Fprintf(fs.Output(), "Usage: sluice %s %s\n\n%s\n\nFlags:\n", v, vb.usage, vb.short)
			}
		}
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may appear before or after positional
// arguments and returns the positional ones. Asked for --help, it prints
// the usage to standard output.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	defer helpOuts.Delete(fs)
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(helpOut(fs))
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newRunner builds a runner with the connection flag and the env.
func newRunner(e *env, conn string) *runner.Runner {
	return &runner.Runner{Log: e.log, Conn: conn, LookupEnv: e.lookup, Stdout: e.stdout}
}
