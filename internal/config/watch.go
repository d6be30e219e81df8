package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Files names the configuration files; an empty path means the embedded default.
type Files struct {
	Pools     string
	Timeouts  string
	Scheduler string
}

// FilesFromEnv returns the paths POOL_CONFIG_PATH, TIMEOUT_CONFIG_PATH and
// SCHEDULER_CONFIG_PATH name.
func FilesFromEnv() Files {
	return Files{
		Pools:     os.Getenv(EnvPoolConfig),
		Timeouts:  os.Getenv(EnvTimeoutConfig),
		Scheduler: os.Getenv(EnvSchedulerConfig),
	}
}

func (f Files) paths() []string {
	var out []string
	for _, p := range []string{f.Pools, f.Timeouts, f.Scheduler} {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Bundle is one consistent set of the three configurations.
type Bundle struct {
	Pools     *Pools
	Timeouts  *Timeouts
	Scheduler *Scheduler
}

// Load reads the three files (the embedded defaults where f names none).
func Load(f Files) (*Bundle, error) {
	p, err := LoadPools(f.Pools)
	if err != nil {
		return nil, err
	}
	t, err := LoadTimeouts(f.Timeouts)
	if err != nil {
		return nil, err
	}
	s, err := LoadScheduler(f.Scheduler)
	if err != nil {
		return nil, err
	}
	return &Bundle{Pools: p, Timeouts: t, Scheduler: s}, nil
}

// Watcher reloads configuration files when they change on disk.
type Watcher struct {
	fsw  *fsnotify.Watcher
	done chan struct{}
	once sync.Once
}

// Watch watches the files f names (their directories, so that editors that
// replace a file by renaming, and Kubernetes' symlink swaps, are seen).
// After a change, once no event came for debounce, it loads every file
// again: when the contents changed and every file parses, onChange gets the
// new Bundle; when one does not parse, onError gets the error and the
// configuration in force stays. With no path in f, Watch watches nothing.
func Watch(f Files, debounce time.Duration, onChange func(*Bundle), onError func(error)) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watch: %w", err)
	}
	dirs := map[string]bool{}
	for _, p := range f.paths() {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("config: watch %s: %w", p, err), fsw.Close())
		}
		dir := filepath.Dir(abs)
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		if err := fsw.Add(dir); err != nil {
			return nil, errors.Join(fmt.Errorf("config: watch %s: %w", dir, err), fsw.Close())
		}
	}
	w := &Watcher{fsw: fsw, done: make(chan struct{})}
	last := snapshot(f)
	go w.loop(f, debounce, last, onChange, onError)
	return w, nil
}

// snapshot reads the watched files' bytes (nil for one that cannot be read).
func snapshot(f Files) [][]byte {
	var out [][]byte
	for _, p := range f.paths() {
		b, _ := os.ReadFile(p)
		out = append(out, b)
	}
	return out
}

func same(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (w *Watcher) loop(f Files, debounce time.Duration, last [][]byte, onChange func(*Bundle), onError func(error)) {
	w.debounced(debounce, onError, func() {
		now := snapshot(f)
		if same(now, last) {
			return
		}
		b, err := Load(f)
		if err != nil {
			if onError != nil {
				onError(err)
			}
			return
		}
		last = now
		onChange(b)
	})
}

// debounced runs reload once no event came for debounce after one did,
// until the watcher closes; onError gets the watcher's errors.
func (w *Watcher) debounced(debounce time.Duration, onError func(error), reload func()) {
	defer close(w.done)
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case ev, ok := <-w.fsw.Events:
			if !ok {
				if timer != nil {
					timer.Stop()
				}
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(debounce)
			} else {
				timer.Reset(debounce)
			}
			fire = timer.C
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if onError != nil {
				onError(fmt.Errorf("config: watch: %w", err))
			}
		case <-fire:
			fire = nil
			reload()
		}
	}
}

// Close stops watching and waits for the watcher's goroutine to end.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		err = w.fsw.Close()
		<-w.done
	})
	if errors.Is(err, fsnotify.ErrClosed) {
		err = nil
	}
	return err
}

// WatchWorkflows watches the workflow definitions of dir (Workflows):
// after a change, once no event came for debounce, it reads them again and
// onChange gets them (with the embedded ones) when they differ from the
// last read; onError gets what went wrong.
func WatchWorkflows(dir string, debounce time.Duration, onChange func(map[string][]byte), onError func(error)) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watch: %w", err)
	}
	if err := fsw.Add(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("config: watch %s: %w", dir, err), fsw.Close())
	}
	w := &Watcher{fsw: fsw, done: make(chan struct{})}
	last, _ := Workflows(dir)
	go w.debounced(debounce, onError, func() {
		now, err := Workflows(dir)
		if err != nil {
			if onError != nil {
				onError(err)
			}
			return
		}
		if sameSources(now, last) {
			return
		}
		last = now
		onChange(now)
	})
	return w, nil
}

func sameSources(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
