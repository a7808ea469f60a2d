package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

func TestParseSchedule(t *testing.T) {
	base := time.Date(2026, 3, 10, 10, 17, 30, 0, time.UTC) // a Tuesday
	for _, tc := range []struct {
		schedule string
		tz       *string
		next     string // RFC3339 in UTC, "" for a parse error
	}{
		{"*/15 * * * *", nil, "2026-03-10T10:30:00Z"},
		{"0 9-17/4 * * *", nil, "2026-03-10T13:00:00Z"},
		{"30 2 * * sun", nil, "2026-03-15T02:30:00Z"},
		{"0 0 1 jan,jul *", nil, "2026-07-01T00:00:00Z"},
		{"@hourly", nil, "2026-03-10T11:00:00Z"},
		{"@daily", nil, "2026-03-11T00:00:00Z"},
		{"0 12 * * *", ptr.To("Europe/Paris"), "2026-03-10T11:00:00Z"},
		{"CRON_TZ=America/New_York 0 6 * * *", nil, "2026-03-11T10:00:00Z"},
		{"0 12 * * *", ptr.To("Not/AZone"), ""},
		{"61 * * * *", nil, ""},
		{"* * * *", nil, ""},
	} {
		cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: tc.schedule, TimeZone: tc.tz}}
		s, _, err := parseSchedule(cj)
		if tc.next == "" {
			if err == nil {
				t.Errorf("%q: parsed", tc.schedule)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.schedule, err)
			continue
		}
		if got := s.Next(base).UTC().Format(time.RFC3339); got != tc.next {
			t.Errorf("%q (tz %v): next %s, want %s", tc.schedule, ptr.Deref(tc.tz, ""), got, tc.next)
		}
	}
}

func TestMostRecent(t *testing.T) {
	earliest := time.Date(2026, 3, 10, 10, 0, 0, 0, time.UTC)
	every := func(s string) *batchv1.CronJob { return &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: s}} }
	for _, tc := range []struct {
		name     string
		schedule string
		now      time.Time
		want     string
		tooMany  bool
	}{
		{"nothing due yet", "0 * * * *", earliest.Add(59 * time.Minute), "", false},
		{"exactly due", "0 * * * *", earliest.Add(time.Hour), "2026-03-10T11:00:00Z", false},
		{"a few missed", "*/10 * * * *", earliest.Add(35 * time.Minute), "2026-03-10T10:30:00Z", false},
		{"far behind", "* * * * *", earliest.Add(30*24*time.Hour + 90*time.Second), "2026-04-09T10:01:00Z", true},
		{"far behind, irregular", "30 6-16/4 * * 1-5", earliest.Add(365 * 24 * time.Hour), "2027-03-10T06:30:00Z", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := parseSchedule(every(tc.schedule))
			if err != nil {
				t.Fatal(err)
			}
			got, tooMany := mostRecent(s, earliest, tc.now)
			str := ""
			if got != nil {
				str = got.UTC().Format(time.RFC3339)
			}
			if str != tc.want || tooMany != tc.tooMany {
				t.Errorf("mostRecent = %q, %v; want %q, %v", str, tooMany, tc.want, tc.tooMany)
			}
		})
	}
}
