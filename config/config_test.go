package config

import (
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	p, err := LoadPools("")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PoolsFor("job.echo"); len(got) != 1 || got[0] != "echo" {
		t.Fatalf("job.echo → %v, want [echo]", got)
	}
	if got := p.Pools["chat-advanced"].Requires; len(got) != 1 || got[0] != "ollama" {
		t.Fatalf("chat-advanced requires %v", got)
	}
	if got := p.Pools["repo-scan"].Module; got != "repo-scan" {
		t.Fatalf("module defaults to the pool name, got %q", got)
	}
	to, err := LoadTimeouts("")
	if err != nil {
		t.Fatal(err)
	}
	r := to.Reconciler
	if r.DispatchTimeout != 120*time.Second || r.RunningTimeout != 300*time.Second || r.ScanInterval != 30*time.Second {
		t.Fatalf("timeouts %+v", r)
	}
}

func TestPoolsTopicList(t *testing.T) {
	p, err := ParsePools("t", []byte("topics:\n  job.a: [x, y]\npools:\n  x: {}\n  y: {module: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PoolsFor("job.a"); len(got) != 2 || got[1] != "y" {
		t.Fatalf("got %v", got)
	}
	if got := p.TopicsFor("y"); len(got) != 1 || got[0] != "job.a" {
		t.Fatalf("TopicsFor = %v", got)
	}
}

func TestPoolsErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"undeclared pool": {"topics:\n  job.a: nope\npools: {}\n", "line 2: topic \"job.a\" maps to pool \"nope\""},
		"empty list":      {"topics:\n  job.a: []\n", "line 2: topic \"job.a\" maps to no pool"},
		"map value":       {"topics:\n  job.a: {x: 1}\n", "line 2"},
		"unknown key":     {"topics: {}\npoolz: {}\n", "line 2"},
		"not yaml":        {"topics: [\n", "t:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePools("t", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestTimeoutsErrors(t *testing.T) {
	if _, err := ParseTimeouts("t", []byte("reconciler:\n  dispatch_timeout: soon\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ParseTimeouts("t", []byte("reconciler:\n  running_timeout: -1s\n")); err == nil {
		t.Fatal("negative accepted")
	}
	to, err := ParseTimeouts("t", nil)
	if err != nil || to.Reconciler.ScanInterval != 30*time.Second {
		t.Fatalf("empty file: %v %+v", err, to)
	}
}

func FuzzParsePools(f *testing.F) {
	data, _ := defaults.ReadFile("pools.yaml")
	f.Add(data)
	f.Add([]byte("topics:\n  job.a: [x]\npools:\n  x: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePools("fuzz", data)
		if err != nil {
			return
		}
		for topic, pools := range p.Topics {
			for _, pool := range pools {
				if _, ok := p.Pools[pool]; !ok {
					t.Fatalf("topic %q maps to undeclared pool %q", topic, pool)
				}
			}
		}
	})
}
