package cronjob

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/robfig/cron/v3"
)

// maxMissed is how many missed start times Kubernetes tolerates before
// warning that the controller is far behind the schedule.
const maxMissed = 100

// parseSchedule reads cj's schedule: the standard five fields, the @
// descriptors, and a time zone from spec.timeZone or a CRON_TZ= prefix.
// The schedule is evaluated in that zone (the controller's, UTC here,
// without one).
func parseSchedule(cj *batchv1.CronJob) (cron.Schedule, *time.Location, error) {
	spec := strings.TrimSpace(cj.Spec.Schedule)
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid timeZone: %q: %w", *tz, err)
		}
		loc = l
		spec = "CRON_TZ=" + *tz + " " + spec
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid schedule %q: %w", cj.Spec.Schedule, err)
	}
	return s, loc, nil
}

// mostRecent returns the latest start time of sched in (earliest, now],
// nil when there is none, and whether more than maxMissed start times
// were missed in between.
func mostRecent(sched cron.Schedule, earliest, now time.Time) (*time.Time, bool) {
	t := sched.Next(earliest)
	if t.IsZero() || t.After(now) {
		return nil, false
	}
	last := t
	for missed := 1; ; missed++ {
		next := sched.Next(last)
		if next.IsZero() || next.After(now) {
			return &last, false
		}
		last = next
		if missed > maxMissed {
			// Far behind (a controller down for long, a clock jump):
			// jump to the end instead of stepping through every miss.
			l := latestBefore(sched, last, now)
			return &l, true
		}
	}
}

// latestBefore returns the last start time of sched in [floor, now],
// floor being one. It searches windows that double back from now, so
// that it costs about as many steps as there are start times in the
// smallest window holding one.
func latestBefore(sched cron.Schedule, floor, now time.Time) time.Time {
	for w := time.Second; ; w *= 2 {
		start := now.Add(-w)
		if !start.After(floor) {
			start = floor.Add(-time.Nanosecond)
		}
		var last time.Time
		for t := sched.Next(start); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			last = t
		}
		if !last.IsZero() {
			return last
		}
	}
}
