//go:build unix

package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// pidNamespace names this process's pid namespace on Linux
// ("pid:[4026531836]"); "" elsewhere. Two processes compare pids only
// when host name and pid namespace both match.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// processGone reports whether no process pid exists on this host (a
// signal 0 finds none, or Linux's /proc shows it a zombie: killed, not yet
// reaped). A pid that exists — possibly reused by another program — is not
// gone.
func processGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) S …: the state follows the last ')'.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z'
	}
	return false
}
