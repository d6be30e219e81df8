package host

import "time"

// SetResultTry shortens how long a result waits for its answer before it
// is sent again, until the test ends (restore).
func SetResultTry(d time.Duration) (restore func()) {
	old := resultTry
	resultTry = d
	return func() { resultTry = old }
}

// The counters the external tests (package host_test) read.
var (
	DispatchesRefused = dispatchesRefused
	JobsRun           = jobsRun
	ResultResends     = resultResends
)
