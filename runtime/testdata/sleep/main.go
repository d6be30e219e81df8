// Command sleep sleeps for an hour: it blocks in the host (poll_oneoff)
// rather than spinning in guest code.
package main

import "time"

func main() {
	time.Sleep(time.Hour)
}
