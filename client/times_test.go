package client_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/client"
)

// TestParseTime: the CLI and the API read a filter's time the same way.
func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"1h", now.Add(-time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"0s", now},
		{"2026-11-27T08:30:00Z", time.Date(2026, 11, 27, 8, 30, 0, 0, time.UTC)},
		{"2026-11-27T10:30:00+02:00", time.Date(2026, 11, 27, 8, 30, 0, 0, time.UTC)},
		{"1795000000000", time.UnixMilli(1795000000000)},
	} {
		got, err := client.ParseTime(tc.in, now)
		if err != nil || got != tc.want.UnixMilli() {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want.UnixMilli())
		}
	}
	for _, bad := range []string{"", "yesterday", "-1h", "2026-11-27", "1h30"} {
		if got, err := client.ParseTime(bad, now); err == nil {
			t.Errorf("ParseTime(%q) = %d, want an error", bad, got)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseTime(%q): the error %q does not quote the input", bad, err)
		}
	}
}
