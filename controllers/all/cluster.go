package all

import "cairn/controllers"

// cluster are the controllers of nodes, services, namespaces and object
// lifecycles.
func cluster() []controllers.Descriptor {
	return nil
}
