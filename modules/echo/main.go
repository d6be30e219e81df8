// Command echo is Ward's simplest worker module: it writes the job's payload
// back unchanged as the job's result.
//
// Build it for Ward with:
//
//	GOOS=wasip1 GOARCH=wasm go build -o modules/build/echo.wasm ./modules/echo
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "echo: %v\n", err)
		os.Exit(1)
	}
}
