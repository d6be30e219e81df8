//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
)

// Enabled says whether this build has failpoints (the failpoints tag).
const Enabled = true

var (
	mu    sync.Mutex
	armed string // the point the next Hit of kills the process
)

func init() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			b, err := os.ReadFile(os.Getenv("WARD_FAILPOINT_FILE"))
			mu.Lock()
			armed = strings.TrimSpace(string(b))
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "failpoint: armed %q (%v)\n", armed, err)
		}
	}()
}

// Hit kills the process with SIGKILL if name is the armed point.
func Hit(name string, what ...any) {
	mu.Lock()
	hit := armed != "" && armed == name
	mu.Unlock()
	if !hit {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint: %s hit at %s: SIGKILL\n", name, fmt.Sprint(what...))
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not handled: nothing runs after it
}
