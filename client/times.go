package client

import (
	"fmt"
	"strconv"
	"time"
)

// ParseTime reads a point in time as users write it in a filter (the CLI's
// --since and --until, the API's since and until): a duration ago ("1h",
// "90m"), a time in RFC 3339 ("2026-11-28T09:00:00Z"), or Unix
// milliseconds. It returns Unix milliseconds; now is what a duration is
// counted back from.
func ParseTime(s string, now time.Time) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q: a duration ago is positive (1h)", s)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a duration ago (1h), a time (RFC 3339) nor Unix milliseconds", s)
	}
	return t.UnixMilli(), nil
}
