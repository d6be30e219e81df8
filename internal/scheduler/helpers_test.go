package scheduler

import (
	"testing"

	"github.com/ward-run/ward/internal/config"
)

func mustPools(t testing.TB, yaml string) *config.Pools {
	t.Helper()
	p, err := config.ParsePools("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
