// Command cat is a plain WASI command: it copies stdin to stdout and says
// so on stderr.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	n, err := io.Copy(os.Stdout, os.Stdin)
	fmt.Fprintf(os.Stderr, "copied %d bytes\n", n)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
