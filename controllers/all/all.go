// Package all lists every controller the manager runs by default.
package all

import "cairn/controllers"

// Descriptors returns every controller, in the order they are started.
func Descriptors() []controllers.Descriptor {
	return append(workloads(), cluster()...)
}
