package main

import (
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/jobstore"
)

// TestEndedBound: --max-ended-jobs and --max-ended-bytes make the memory
// store's bound; 0 lifts each, and what is not a count or a size is an
// error that names the flag.
func TestEndedBound(t *testing.T) {
	for _, tc := range []struct {
		jobs int
		size string
		want jobstore.Bound
		err  string
	}{
		{assembly.DefaultMaxEndedJobs, "128MiB", jobstore.Bound{MaxEnded: 20000, MaxEndedBytes: 128 << 20}, ""},
		{500, "1 GiB", jobstore.Bound{MaxEnded: 500, MaxEndedBytes: 1 << 30}, ""},
		{0, "0", jobstore.Bound{}, ""},
		{0, "4096", jobstore.Bound{MaxEndedBytes: 4096}, ""},
		{-1, "0", jobstore.Bound{}, "--max-ended-jobs -1"},
		{10, "lots", jobstore.Bound{}, "--max-ended-bytes"},
		{10, "-5MiB", jobstore.Bound{}, "--max-ended-bytes"},
	} {
		got, err := endedBound(tc.jobs, tc.size)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("endedBound(%d, %q): %v, want an error naming %s", tc.jobs, tc.size, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("endedBound(%d, %q) = %+v, %v; want %+v", tc.jobs, tc.size, got, err, tc.want)
		}
	}
	if s := (jobstore.Bound{MaxEnded: 20000, MaxEndedBytes: 128 << 20}).String(); s != "at most 20000 ended jobs and 128 MiB of them" {
		t.Errorf("the bound says %q", s)
	}
	if s := (jobstore.Bound{MaxEndedBytes: 1500}).String(); s != "at most 1500 B of ended jobs" {
		t.Errorf("a byte bound says %q", s)
	}
	if s := (jobstore.Bound{}).String(); s != "no bound" {
		t.Errorf("no bound says %q", s)
	}
}
