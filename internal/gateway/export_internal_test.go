package gateway

// SetUISample makes the overview count the newest n jobs, and read the
// newest bad of each state that ends badly, until the returned func is
// called (for a test that cannot make a thousand jobs).
func SetUISample(n, bad int) (restore func()) {
	oldN, oldBad := uiSampleSize, uiBadSample
	uiSampleSize, uiBadSample = n, bad
	return func() { uiSampleSize, uiBadSample = oldN, oldBad }
}
