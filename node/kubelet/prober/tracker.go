package prober

// Kind is what a probe decides about a container.
type Kind int

// Probe kinds.
const (
	Liveness Kind = iota
	Readiness
	Startup
)

// String names the kind as Kubernetes events do ("Liveness probe failed").
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	}
	return "Startup"
}

// initial is the result a kind holds before its probe has decided:
// a container is alive and not ready until probes say otherwise, and
// its startup is undecided.
func (k Kind) initial() Result {
	switch k {
	case Liveness:
		return Success
	case Readiness:
		return Failure
	}
	return Unknown
}

// tracker turns probe attempts into a result: the result changes only
// after successThreshold successes or failureThreshold failures in a
// row.
type tracker struct {
	result Result // the reported result
	last   Result // the last attempt's
	run    int32  // attempts in a row with last's outcome
}

// observe records an attempt and returns the reported result and
// whether it changed.
func (t *tracker) observe(r Result, successThreshold, failureThreshold int32) (Result, bool) {
	if successThreshold < 1 {
		successThreshold = 1
	}
	if failureThreshold < 1 {
		failureThreshold = 1
	}
	if r == t.last {
		t.run++
	} else {
		t.last, t.run = r, 1
	}
	if (r == Success && t.run < successThreshold) || (r == Failure && t.run < failureThreshold) {
		return t.result, false
	}
	if r == t.result {
		return t.result, false
	}
	t.result = r
	return r, true
}
