package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagValueNames: every flag's help names its value in one word. A
// flag's usage that quotes a command in backquotes made that command the
// value's name (`--creds ward dev   NATS credential file`), on every
// command's help, since --creds is global.
func TestFlagValueNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: its help reads %q as the value's name", c.CommandPath(), f.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if _, usage := pflag.UnquoteUsage(newRoot().PersistentFlags().Lookup("creds")); !strings.HasPrefix(usage, "NATS credential file") {
		t.Errorf("--creds: %q", usage)
	}
}
