package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// sandboxFlags are what a host may give its jobs' sandboxes beyond the
// defaults, when a job is granted it: directories to mount and environment
// values.
type sandboxFlags struct {
	mountRoots []string
	moduleEnv  []string
}

func (s *sandboxFlags) register(f *pflag.FlagSet) {
	f.StringSliceVar(&s.mountRoots, "mount-root", splitList(os.Getenv("WARD_MOUNT_ROOTS")),
		"directory under which jobs may be granted read-only directories (repeatable; $WARD_MOUNT_ROOTS, comma-separated); none: no mounts")
	f.StringSliceVar(&s.moduleEnv, "module-env", []string{"OLLAMA_URL", "OLLAMA_MODEL"},
		"environment a job granted the key may read: KEY (this process's value) or KEY=VALUE (repeatable)")
}

// env resolves --module-env; ollamaURL, when set, is OLLAMA_URL's value.
func (s *sandboxFlags) env(ollamaURL string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range s.moduleEnv {
		k, v, hasValue := strings.Cut(kv, "=")
		if k == "" {
			return nil, fmt.Errorf("--module-env %q: want KEY or KEY=VALUE", kv)
		}
		if !hasValue {
			var ok bool
			if v, ok = os.LookupEnv(k); !ok {
				continue
			}
		}
		out[k] = v
	}
	if _, set := out["OLLAMA_URL"]; !set && ollamaURL != "" {
		out["OLLAMA_URL"] = ollamaURL
	}
	return out, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
