package redistest

import (
	"strings"
	"testing"
)

func TestStart(t *testing.T) {
	url := Start(t)
	addr, ok := strings.CutPrefix(url, "redis://")
	if !ok {
		t.Fatalf("Start returned %q, want a redis:// URL", url)
	}
	if err := ping(addr); err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
}
