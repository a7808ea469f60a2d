package all

import "cairn/controllers"

// workloads are the controllers of pods' owners.
func workloads() []controllers.Descriptor {
	return nil
}
