package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagHelpHasNoBackquotes walks every command: pflag prints a
// backquoted word of a usage string as the flag's value name, so
// "--learner `cairn etcdctl member promote`" would read as if the flag took
// that command as its value.
func TestFlagHelpHasNoBackquotes(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: the usage %q has backquotes; help shows the quoted words as the value name", c.CommandPath(), f.Name, f.Usage)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestTLSSANIsAnAPIFlag checks that both commands that serve the API take
// --tls-san, repeated and comma separated.
func TestTLSSANIsAnAPIFlag(t *testing.T) {
	for _, name := range []string{"server", "apiserver"} {
		t.Run(name, func(t *testing.T) {
			cmd, _, err := newRootCmd().Find([]string{name})
			if err != nil {
				t.Fatal(err)
			}
			f := cmd.Flags()
			if err := f.Parse([]string{"--tls-san", "lb.example.com,10.0.0.10", "--tls-san", "api.example.com"}); err != nil {
				t.Fatal(err)
			}
			got, err := f.GetStringSlice("tls-san")
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"lb.example.com", "10.0.0.10", "api.example.com"}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("--tls-san parsed as %v, want %v", got, want)
			}
		})
	}
}
