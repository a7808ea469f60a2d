// Package controllers holds the controller manager and one sub-package per
// controller, each built on client-go informers and workqueues.
package controllers
