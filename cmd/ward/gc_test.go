package main

import (
	"runtime/debug"
	"testing"
)

// TestServerGC: the long-lived roles collect at serverGCPercent unless
// GOGC is set; client commands keep Go's default.
func TestServerGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	root := newRoot()
	gogc := func(args ...string) int {
		debug.SetGCPercent(100)
		cmd, _, err := root.Find(args)
		if err != nil {
			t.Fatal(err)
		}
		serverGC(cmd)
		return debug.SetGCPercent(100)
	}
	for _, args := range [][]string{{"dev"}, {"scheduler"}, {"host"}, {"safety"}, {"gateway"}} {
		if got := gogc(args...); got != serverGCPercent {
			t.Errorf("ward %v collects at %d, want %d", args, got, serverGCPercent)
		}
	}
	for _, args := range [][]string{{"submit"}, {"bench"}, {"scheduler", "ls"}, {"jobs", "ls"}} {
		if got := gogc(args...); got != 100 {
			t.Errorf("client command ward %v collects at %d, want Go's default", args, got)
		}
	}
	t.Setenv("GOGC", "100")
	if got := gogc("scheduler"); got != 100 {
		t.Errorf("with GOGC set, ward scheduler collects at %d, want GOGC's 100", got)
	}
}
