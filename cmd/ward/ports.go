package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// checkPorts tries to listen on every address in addrs (a flag → its
// address; an empty address or port 0 is skipped) and returns one error
// naming every one that is taken, with the flag that moves it, so that a
// second `ward dev` learns at once, and of all of them together.
func checkPorts(addrs map[string]string) error {
	var busy []string
	for _, flag := range slices.Sorted(maps.Keys(addrs)) {
		addr := addrs[flag]
		if addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(addr); err == nil && (port == "0" || port == "-1") {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			var why string
			if errors.Is(err, syscall.EADDRINUSE) {
				why = "in use"
			} else {
				why = err.Error()
			}
			busy = append(busy, fmt.Sprintf("%s (%s): %s", addr, flag, why))
			continue
		}
		if err := l.Close(); err != nil {
			busy = append(busy, fmt.Sprintf("%s (%s): close the probe: %v", addr, flag, err))
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("cannot listen on %s; is another ward dev running? Stop it, or move these with the flags named", strings.Join(busy, ", "))
	}
	return nil
}

// selfName is this binary as the user ran it, for the commands a banner
// suggests: bin/ward, ./ward, or ward when it was found on the PATH.
func selfName() string {
	name := os.Args[0]
	if !strings.ContainsRune(name, filepath.Separator) {
		return filepath.Base(name)
	}
	return name
}
