// Package scheduler places pods on nodes through a framework of small plugins.
package scheduler
