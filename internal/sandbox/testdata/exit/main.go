// Command exit logs a few lines to stderr, then exits with code 3.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "starting")
	fmt.Fprintln(os.Stderr, "bad input: want JSON")
	fmt.Fprintln(os.Stderr)
	os.Exit(3)
}
