// Command hello is a module for the deploy tests: it answers
// "hello <version>: <input>", where version is set at build time
// (-ldflags -X main.version=...). An input "sleep <ms>" makes it sleep
// first, for a job that is still running when a new version lands.
package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/ward-run/ward/modules/sdk"
)

var version = "dev"

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		in, err := j.Input()
		if err != nil {
			return err
		}
		if ms, ok := strings.CutPrefix(string(in), "sleep "); ok {
			n, _ := strconv.Atoi(ms)
			time.Sleep(time.Duration(n) * time.Millisecond)
		}
		_, err = j.WriteString("hello " + version + ": " + string(in))
		return err
	})
}

func main() { sdk.Main() }
