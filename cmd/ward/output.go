package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/internal/apijson"
)

// The output formats of the read commands (-o).
const (
	outTable = "table"
	outJSON  = "json"
	outYAML  = "yaml"
)

// output is a read command's -o flag: a table for people (the default),
// or JSON or YAML for scripts. JSON and YAML print the records as the
// HTTP API returns them (package view: enums by their short name, numbers
// as numbers, a result that is JSON as JSON); a list is an array.
type output struct {
	format string
}

// addOutput registers -o/--output on cmd and checks its value before the
// command runs: an unknown format is an error that lists the three.
func addOutput(cmd *cobra.Command) *output {
	o := &output{}
	cmd.Flags().StringVarP(&o.format, "output", "o", outTable, "output format: table, json or yaml (json and yaml: the JSON the HTTP API returns)")
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := o.check(); err != nil {
			return err
		}
		if pre != nil {
			return pre(c, args)
		}
		return nil
	}
	return o
}

// addJSONAlias adds the deprecated, hidden --json of the commands that
// had one: it is -o json.
func (o *output) addJSONAlias(cmd *cobra.Command) {
	var asJSON bool
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (deprecated: -o json)")
	_ = cmd.Flags().MarkHidden("json")
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if asJSON {
			if c.Flags().Changed("output") && o.format != outJSON {
				return fmt.Errorf("--json and -o %s: choose one", o.format)
			}
			o.format = outJSON
		}
		return pre(c, args)
	}
}

// check says whether the format is one of the three; "text" (the old
// default of the workflow commands) is table.
func (o *output) check() error {
	switch o.format {
	case outTable, outJSON, outYAML:
		return nil
	case "text":
		o.format = outTable
		return nil
	}
	return fmt.Errorf("-o %q: unknown output format; want table, json or yaml", o.format)
}

// table reports whether the command prints its table.
func (o *output) table() bool { return o.format == outTable || o.format == "" }

// print writes v as JSON or YAML. v is a view (apijson.Of, apijson.List), or
// anything encoding/json writes.
func (o *output) print(w io.Writer, v any) error { return printAs(w, o.format, v) }

// printAs writes v in format (json or yaml).
func printAs(w io.Writer, format string, v any) error {
	switch format {
	case outYAML:
		p, err := apijson.Plain(v)
		if err != nil {
			return err
		}
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(p); err != nil {
			return err
		}
		return enc.Close()
	default:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
}
