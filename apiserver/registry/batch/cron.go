package batch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronField is one of the five fields of a standard cron schedule.
type cronField struct {
	min, max int
	names    map[string]int
}

var cronFields = []cronField{
	{min: 0, max: 59},
	{min: 0, max: 23},
	{min: 1, max: 31},
	{min: 1, max: 12, names: map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}},
	{min: 0, max: 6, names: map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}},
}

var cronDescriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// parseCronSchedule checks a schedule the way the cron job controller
// will read it (the standard five fields, the @ descriptors, an optional
// TZ= prefix), with the same error texts, so a bad schedule is refused at
// create time instead of silently never firing.
func parseCronSchedule(spec string) error {
	if spec == "" {
		return fmt.Errorf("empty spec string")
	}
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		i := strings.Index(spec, " ")
		if i < 0 {
			return fmt.Errorf("provided bad location %s: missing schedule", spec)
		}
		_, tz, _ := strings.Cut(spec[:i], "=")
		if _, err := time.LoadLocation(tz); err != nil {
			return fmt.Errorf("provided bad location %s: %v", tz, err)
		}
		spec = strings.TrimSpace(spec[i:])
	}
	if strings.HasPrefix(spec, "@") {
		if strings.HasPrefix(spec, "@every ") {
			d := strings.TrimPrefix(spec, "@every ")
			if _, err := time.ParseDuration(d); err != nil {
				return fmt.Errorf("failed to parse duration %s: %s", spec, err)
			}
			return nil
		}
		if !cronDescriptors[spec] {
			return fmt.Errorf("unrecognized descriptor: %s", spec)
		}
		return nil
	}
	fields := strings.Fields(spec)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("expected exactly %d fields, found %d: %s", len(cronFields), len(fields), fields)
	}
	for i, f := range fields {
		for _, expr := range strings.Split(f, ",") {
			if err := parseCronRange(expr, cronFields[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func parseCronRange(expr string, f cronField) error {
	rangeAndStep := strings.Split(expr, "/")
	lowAndHigh := strings.Split(rangeAndStep[0], "-")
	singleDigit := len(lowAndHigh) == 1
	var start, end int
	var err error
	if lowAndHigh[0] == "*" || lowAndHigh[0] == "?" {
		start, end = f.min, f.max
	} else {
		if start, err = cronValue(lowAndHigh[0], f.names); err != nil {
			return err
		}
		end = start
		switch len(lowAndHigh) {
		case 1:
		case 2:
			if end, err = cronValue(lowAndHigh[1], f.names); err != nil {
				return err
			}
		default:
			return fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	switch len(rangeAndStep) {
	case 1:
	case 2:
		step, err := cronInt(rangeAndStep[1])
		if err != nil {
			return err
		}
		if step <= 0 {
			return fmt.Errorf("step of range should be a positive number: %s", expr)
		}
		if singleDigit {
			end = f.max
		}
	default:
		return fmt.Errorf("too many slashes: %s", expr)
	}
	switch {
	case start < f.min:
		return fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, f.min, expr)
	case end > f.max:
		return fmt.Errorf("end of range (%d) above maximum (%d): %s", end, f.max, expr)
	case start > end:
		return fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	}
	return nil
}

func cronValue(s string, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	return cronInt(s)
}

func cronInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %s", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return n, nil
}
