// Command hostile is a reactor that misbehaves on request, for the
// sandbox's tests: its input is {"do": "<what>", "arg": "<argument>"}. An
// input over 1 MiB is not a request: the result is its sha256, in hex.
package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ward-run/ward/modules/sdk"
)

// served counts the jobs this instance ran: pooled instances keep it.
var served int

var sink uint64

func init() {
	sdk.Handle(func(j *sdk.Job) error {
		served++
		var req struct{ Do, Arg string }
		if j.InputSize() > 1<<20 {
			// A large input is hashed as it streams in: the host's tests
			// check that every byte arrived.
			h := sha256.New()
			if _, err := io.Copy(h, j.Reader()); err != nil {
				return err
			}
			_, err := fmt.Fprintf(j, "%x", h.Sum(nil))
			return err
		}
		if err := j.DecodeJSON(&req); err != nil {
			return err
		}
		switch req.Do {
		case "echo":
			_, err := j.WriteString(req.Arg)
			return err
		case "served":
			_, err := j.WriteString(strconv.Itoa(served))
			return err
		case "loop":
			for i := uint64(0); ; i++ {
				sink += i
			}
		case "spin":
			n, _ := strconv.Atoi(req.Arg)
			x := uint64(1)
			for i := 0; i < n; i++ {
				x = x*6364136223846793005 + 1442695040888963407
				x ^= x >> 17
			}
			_, err := fmt.Fprint(j, x)
			return err
		case "sleep":
			time.Sleep(time.Hour)
		case "talk":
			// Reports progress and streams a line, then sleeps: what a
			// watcher attaching late should still see.
			j.Progress(50, "half way")
			if err := j.Stream("hello from the job\n"); err != nil {
				return err
			}
			time.Sleep(time.Hour)
		case "membomb":
			var keep [][]byte
			for {
				b := make([]byte, 1<<20)
				for i := range b {
					b[i] = byte(i)
				}
				keep = append(keep, b)
			}
		case "bigout":
			buf := []byte(strings.Repeat("x", 64<<10))
			for {
				_, _ = j.Write(buf) // errors ignored: the host must stop it
			}
		case "panic":
			panic("no handler for job kind")
		case "exit":
			os.Exit(3)
		case "fail":
			return errors.New(req.Arg)
		case "refuse":
			return sdk.Refuse(errors.New(req.Arg))
		case "read":
			b, err := os.ReadFile(req.Arg)
			if err != nil {
				return err
			}
			_, err = j.Write(b)
			return err
		case "write":
			return os.WriteFile(req.Arg, []byte("pwned"), 0o644)
		case "ls":
			entries, err := os.ReadDir(req.Arg)
			if err != nil {
				return err
			}
			for _, e := range entries {
				fmt.Fprintln(j, e.Name())
			}
			return nil
		case "http":
			resp, err := sdk.Fetch(&sdk.Request{URL: req.Arg})
			if err != nil {
				return fmt.Errorf("fetch: %w", err)
			}
			_, err = fmt.Fprintf(j, "%d %s", resp.Status, resp.Body)
			return err
		case "httpstream":
			// Reads a streamed body as it arrives, a line at a time, and
			// streams each line on.
			resp, err := sdk.FetchStream(&sdk.Request{URL: req.Arg})
			if err != nil {
				return fmt.Errorf("fetch: %w", err)
			}
			defer resp.Body.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 {
					_, _ = j.Write(buf[:n])
					_ = j.Stream(string(buf[:n]))
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return fmt.Errorf("read: %w", err)
				}
			}
		case "stream":
			// Streams <count> pieces of <size> bytes ("count:size"), each
			// piece its index's last digit repeated; the result counts
			// the pieces the host refused.
			count, size, _ := strings.Cut(req.Arg, ":")
			n, _ := strconv.Atoi(count)
			k, _ := strconv.Atoi(size)
			refused := 0
			for i := range n {
				if j.Stream(strings.Repeat(strconv.Itoa(i%10), k)) != nil {
					refused++
				}
			}
			_, err := fmt.Fprint(j, refused)
			return err
		case "env":
			_, err := j.WriteString(os.Getenv(req.Arg))
			return err
		case "info":
			return j.WriteJSON(j.Info())
		case "log":
			n, _ := strconv.Atoi(req.Arg)
			for i := range n {
				j.Logf("line %d", i)
			}
			return nil
		case "progress":
			for p := 0; p <= 100; p += 25 {
				j.Progress(p, fmt.Sprintf("step %d", p))
				time.Sleep(150 * time.Millisecond)
			}
			return nil
		}
		return fmt.Errorf("unknown request %q", req.Do)
	})
}

func main() { sdk.Main() }
