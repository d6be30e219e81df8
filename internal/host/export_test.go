package host

// The counters the external tests (package host_test) read.
var (
	DispatchesRefused = dispatchesRefused
	JobsRun           = jobsRun
	ResultResends     = resultResends
)
