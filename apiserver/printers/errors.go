package printers

import "errors"

// ErrNotPrintable is returned for objects that cannot become a table row
// because they carry no object metadata. Kubernetes answers such requests
// with 406 Not Acceptable.
var ErrNotPrintable = errors.New("printers: object cannot be shown as a table")

// ErrIncludeObject is returned for an includeObject value other than None,
// Metadata or Object; the request is a bad one (400).
var ErrIncludeObject = errors.New("printers: unrecognized includeObject value")
