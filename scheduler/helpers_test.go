package scheduler

import (
	"testing"

	"github.com/ward-run/ward/config"
)

func mustPools(t testing.TB, yaml string) *config.Pools {
	t.Helper()
	p, err := config.ParsePools("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ModuleVersion lets the external tests read the module version in force
// (moduleVersion).
func (s *Scheduler) ModuleVersion(name string) (version, digest string, ok bool) {
	return s.moduleVersion(name)
}
