// Command sleep is a test module: it sleeps for the duration its payload
// names (e.g. "150ms", with any white space after it), then echoes the
// payload.
package main

import (
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	in, _ := io.ReadAll(os.Stdin)
	d, err := time.ParseDuration(strings.TrimSpace(string(in)))
	if err != nil {
		os.Stderr.WriteString("bad duration\n")
		os.Exit(2)
	}
	time.Sleep(d)
	os.Stdout.Write(in)
}
