// Command panic panics, so the Go runtime prints a stack trace to stderr and
// exits with code 2.
package main

func main() {
	panic("no handler for job kind")
}
