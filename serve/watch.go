package serve

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/walk"
)

// jobFileExts are the extensions of job files that Watch and JobFiles
// look at.
var jobFileExts = []string{".yaml", ".yml", ".sql"}

// fileStamp is what Watch compares: size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

// JobFiles lists the job files of paths: a file is taken as is; a directory
// is walked recursively for *.yaml, *.yml and *.sql files, skipping
// entries whose name starts with "." (editor swap files, and the
// "..data" links of a Kubernetes ConfigMap volume, whose files also appear
// as top-level symlinks). The result is sorted. A path that does not exist
// is an error.
func JobFiles(paths []string) ([]string, error) {
	return walk.Files(paths, func(path string) bool {
		if dsl.IsTestFile(path) {
			return false // a job test (sluice test), not a job
		}
		return slices.Contains(jobFileExts, strings.ToLower(filepath.Ext(path)))
	})
}

// snapshot stamps the job files of paths (following symlinks); paths that
// cannot be listed are stamped as missing.
func snapshot(paths []string) map[string]fileStamp {
	m := map[string]fileStamp{}
	files, err := JobFiles(paths)
	if err != nil {
		m["\x00error"] = fileStamp{size: -1}
		return m
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			m[f] = fileStamp{size: -1}
			continue
		}
		m[f] = fileStamp{size: fi.Size(), mod: fi.ModTime()}
	}
	return m
}

// Watch polls the job files of paths (see JobFiles) every interval (0 →
// 1s) on clock and calls onChange after a file was added, removed or
// modified (size or modification time), at most once per poll. It returns
// when ctx ends. Polling instead of inotify keeps it dependency-free and
// works on network and ConfigMap volumes; a poll costs one stat per file.
func Watch(ctx context.Context, clock Clock, interval time.Duration, paths []string, onChange func()) {
	if interval <= 0 {
		interval = time.Second
	}
	if clock == nil {
		clock = SystemClock()
	}
	prev := snapshot(paths)
	for {
		t := clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		cur := snapshot(paths)
		if !maps.Equal(prev, cur) {
			prev = cur
			onChange()
		}
	}
}
