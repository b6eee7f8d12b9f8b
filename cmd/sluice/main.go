// Command sluice runs declarative change-data pipelines: job files that
// consume a table stream's changes into a target table. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
