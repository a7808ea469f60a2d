package main

import (
	"os"
	"regexp"
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

// TestEveryCommandAndFlagIsInTheReadme walks every command but the
// embedded kubectl and etcdctl, which document themselves: the README
// must name each command and each of its flags, as users meet them.
func TestEveryCommandAndFlagIsInTheReadme(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	skip := map[string]bool{"cairn kubectl": true, "cairn etcdctl": true, "cairn completion": true, "cairn help": true}
	flags := 0
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		path := c.CommandPath()
		if skip[path] || c.Hidden {
			return
		}
		if c.HasParent() && !strings.Contains(readme, strings.TrimPrefix(path, "cairn ")) {
			t.Errorf("the README does not name the command %q", path)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			flags++
			if !documented(readme, f.Name) {
				t.Errorf("the README does not document %s --%s", path, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if flags < 100 {
		t.Errorf("found only %d flags: is the walk missing commands?", flags)
	}
}

// documented reports whether the README names the flag: whole, as
// --name, or as the last part of a family a table row lists together,
// as in "--leader-elect-lease-duration / -renew-deadline".
func documented(readme, name string) bool {
	if regexp.MustCompile("--" + regexp.QuoteMeta(name) + `([^\w-]|$)`).MatchString(readme) {
		return true
	}
	for i, r := range name {
		if r == '-' && strings.Contains(readme, "--"+name[:i]) && strings.Contains(readme, "`"+name[i:]+"`") {
			return true
		}
	}
	return false
}
