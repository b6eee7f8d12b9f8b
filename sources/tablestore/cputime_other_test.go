//go:build !unix

package tablestore

import "time"

func cpuTime() time.Duration { return 0 }
