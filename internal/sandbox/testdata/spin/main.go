// Command spin runs a fixed CPU-bound loop and prints its result: a
// benchmark guest for the cost of the sandbox's interruption checks.
package main

import "fmt"

func main() {
	x := uint64(1)
	for i := 0; i < 50_000_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 17
	}
	fmt.Println(x)
}
