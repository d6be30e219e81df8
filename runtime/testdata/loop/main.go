// Command loop never returns: it spins without calling the host.
package main

var sink int

func main() {
	for i := 0; ; i++ {
		sink += i
	}
}
