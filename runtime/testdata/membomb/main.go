// Command membomb allocates (and keeps) memory until something stops it.
package main

var keep [][]byte

func main() {
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = byte(i)
		}
		keep = append(keep, b)
	}
}
