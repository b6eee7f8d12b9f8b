package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"github.com/sluicedata/sluice/cmd/sluice/internal/cli"
)

// execEnv, set in a process's environment, makes this test binary the
// sluice command (execMain) instead of running tests: tests that need
// sluice in processes of its own start it with sluiceProc.
const execEnv = "SLUICE_E2E_EXEC"

// execMain is cmd/sluice's main: cli.Main with SIGINT/SIGTERM cancelling
// the context.
func execMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// syncBuf is a bytes.Buffer safe for a process's writes and the test's
// reads at once.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is sluice running in a process of its own.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuf
	done           chan struct{}
	code           int
}

// sluiceProc starts sluice with args in a new process (this test binary,
// execEnv set); the test's end kills it if it still runs.
func sluiceProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), execEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait() // reaps the process: a killed one is no zombie after done
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string { return p.stdout.String() + p.stderr.String() }
