package dep

// Dep is vendored.
func Dep() {}
