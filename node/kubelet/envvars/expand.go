// Package envvars builds a container's environment the way Kubernetes
// does: envFrom, env with valueFrom sources, `$(VAR)` references and the
// service link variables, and expands `$(VAR)` in command and args.
package envvars

import "strings"

// Expand replaces each `$(NAME)` in s by lookup(NAME) when lookup knows
// NAME, and leaves it as written otherwise. `$$` stands for a literal `$`,
// so `$$(NAME)` yields `$(NAME)` unexpanded. A `$` followed by anything
// else, or a `$(` never closed, is kept as is. These are the rules of
// Kubernetes' env and command expansion, which users rely on:
//
//	"$(A)-$(B)"  with A=1, B unknown  →  "1-$(B)"
//	"$$(A)"                           →  "$(A)"
//	"$$$(A)"     with A=1             →  "$1"
//	"$(A"                             →  "$(A"
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// An unclosed reference is text; the rest is scanned
				// again from the '(' on.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// Lookup returns a lookup function over maps, searched in order.
func Lookup(maps ...map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v, true
			}
		}
		return "", false
	}
}

// ExpandAll expands each string of in with lookup; nil stays nil.
func ExpandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = Expand(s, lookup)
	}
	return out
}
