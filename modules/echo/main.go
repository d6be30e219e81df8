// Command echo is the echo worker: its result is its input.
package main

import "github.com/ward-run/ward/modules/sdk"

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		in, err := j.Input()
		if err != nil {
			return err
		}
		_, err = j.Write(in)
		return err
	})
}

func main() { sdk.Main() }
