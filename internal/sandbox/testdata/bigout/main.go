// Command bigout writes to stdout forever and ignores write errors.
package main

import "os"

func main() {
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = 'x'
	}
	for {
		_, _ = os.Stdout.Write(buf)
	}
}
