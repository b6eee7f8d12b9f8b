package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// Set at link time where the build has no VCS information (a Docker build
// without .git, GOFLAGS=-buildvcs=false), e.g.
//
//	go build -ldflags "-X github.com/sluicedata/sluice/cmd/sluice/internal/cli.version=v1.2.0 \
//	  -X github.com/sluicedata/sluice/cmd/sluice/internal/cli.commit=$(git rev-parse HEAD) \
//	  -X github.com/sluicedata/sluice/cmd/sluice/internal/cli.date=$(date -u +%FT%TZ)" ./cmd/sluice
var version, commit, date string

// buildInfo is what `sluice version` prints.
type buildInfo struct {
	Version  string // module version: a tag (v1.2.0), a pseudo-version, or (devel)
	Commit   string // VCS revision, "" when unknown
	Modified bool   // the work tree had uncommitted changes
	Date     string // commit time (RFC 3339, UTC), "" when unknown
	Go       string // Go toolchain version, e.g. go1.26.0
	Platform string // GOOS/GOARCH
}

// readBuildInfo reads the binary's build information
// (runtime/debug.ReadBuildInfo: the main module's version and the vcs.*
// settings `go build` stamps), overridden by the link-time variables above.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Date = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit = commit
	}
	if date != "" {
		b.Date = date
	}
	return b
}

// versionLine is the text of `sluice version` and `sluice --version`.
func versionLine(b buildInfo) string {
	unknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	c := unknown(b.Commit)
	if b.Modified {
		c += " (modified)"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "sluice %s\n", b.Version)
	fmt.Fprintf(&sb, "  commit: %s\n", c)
	fmt.Fprintf(&sb, "  built:  %s\n", unknown(b.Date))
	fmt.Fprintf(&sb, "  go:     %s %s", b.Go, b.Platform)
	return sb.String()
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, commit, build date and Go version",
		Args:  checkArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(e.stdout, versionLine(readBuildInfo()))
			return err
		},
	}
}
