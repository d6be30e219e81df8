// Command genrepo writes a generated repository of mixed languages and
// sizes (repogen.Realistic) to a directory, for `make bench-review`:
// `go run ./modules/internal/repo/repogen/genrepo -n 10000 DIR`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ward-run/ward/modules/internal/repo/repogen"
)

func main() {
	n := flag.Int("n", 10000, "number of files")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: genrepo [-n FILES] DIR")
		os.Exit(2)
	}
	files := repogen.Realistic(*n)
	if err := repogen.Write(flag.Arg(0), files); err != nil {
		fmt.Fprintln(os.Stderr, "genrepo:", err)
		os.Exit(1)
	}
	var bytes int
	for _, f := range files {
		bytes += len(f.Data)
	}
	fmt.Printf("genrepo: %d files, %.1f MiB in %s\n", len(files), float64(bytes)/(1<<20), flag.Arg(0))
}
