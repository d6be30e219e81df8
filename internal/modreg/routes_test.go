package modreg

import (
	"slices"
	"testing"

	"github.com/ward-run/ward/internal/config"
)

func TestRoutes(t *testing.T) {
	base, err := config.LoadPools("")
	if err != nil {
		t.Fatal(err)
	}
	actives := map[string]*Active{
		// A brand-new topic and pool.
		"hello": {Name: "hello", Version: "1", Route: Route{Topic: "job.hello", Pool: "hello", Requires: []string{"ollama"}}},
		// No pool named: the module's name.
		"greet": {Name: "greet", Version: "1", Route: Route{Topic: "job.greet"}},
		// pools.yaml maps job.echo to echo already: it wins.
		"echo2": {Name: "echo2", Version: "1", Route: Route{Topic: "job.echo", Pool: "echo2"}},
		// A pool pools.yaml gives another module.
		"evil": {Name: "evil", Version: "1", Route: Route{Topic: "job.evil", Pool: "echo"}},
		// A retired module keeps its route.
		"gone": {Name: "gone", Retired: true, Route: Route{Topic: "job.gone"}},
		// No route declared: nothing added.
		"chat-simple": {Name: "chat-simple", Version: "2"},
	}
	got, conflicts := Routes(base, actives)

	if p := got.PoolsFor("job.hello"); !slices.Equal(p, []string{"hello"}) {
		t.Errorf("job.hello → %v", p)
	}
	if p := got.Pools["hello"]; p.Module != "hello" || !slices.Equal(p.Requires, []string{"ollama"}) {
		t.Errorf("pool hello = %+v", p)
	}
	if p := got.PoolsFor("job.greet"); !slices.Equal(p, []string{"greet"}) || got.Pools["greet"].Module != "greet" {
		t.Errorf("job.greet → %v, pool %+v", p, got.Pools["greet"])
	}
	if p := got.PoolsFor("job.echo"); !slices.Equal(p, []string{"echo"}) {
		t.Errorf("job.echo → %v: pools.yaml must win", p)
	}
	if p := got.PoolsFor("job.evil"); p != nil || got.Pools["echo"].Module != "echo" {
		t.Errorf("job.evil → %v, pool echo = %+v: a manifest may not take over a declared pool", p, got.Pools["echo"])
	}
	if p := got.PoolsFor("job.gone"); !slices.Equal(p, []string{"gone"}) {
		t.Errorf("job.gone → %v", p)
	}
	if len(conflicts) != 2 || conflicts[0].Module != "echo2" || conflicts[1].Module != "evil" {
		t.Errorf("conflicts = %+v", conflicts)
	}
	// base is untouched.
	if base.PoolsFor("job.hello") != nil || len(base.Pools) != 10 {
		t.Errorf("base changed: %v", base.Pools)
	}
}
