package helper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCRILogEntries(t *testing.T) {
	long := strings.Repeat("x", maxLogLine+10)
	for _, tc := range []struct {
		name  string
		input string
		want  []string
	}{
		{"lines", "a\nb\n", []string{"stdout F a", "stdout F b"}},
		{"empty line", "\n", []string{"stdout F "}},
		{"no final newline", "a\nb", []string{"stdout F a", "stdout F b"}},
		{"long line split", long + "\n", []string{"stdout P " + long[:maxLogLine], "stdout F " + long[maxLogLine:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pod", "c.log")
			now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
			l, err := openCRILog(path, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			l.copyStream(strings.NewReader(tc.input), "stdout")
			l.close()
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
				ts, rest, _ := strings.Cut(line, " ")
				if ts != "2026-01-02T02:04:05.000000006Z" {
					t.Errorf("timestamp %q, want UTC RFC 3339 with nanoseconds", ts)
				}
				got = append(got, rest)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("entries %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCRILogReopenAfterRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	l, err := openCRILog(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.write("stdout", false, []byte("before"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := l.reopen(); err != nil {
		t.Fatal(err)
	}
	l.write("stderr", false, []byte("after"))
	for p, want := range map[string]string{path + ".1": "stdout F before", path: "stderr F after"} {
		raw, err := os.ReadFile(p)
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(raw)), want) {
			t.Errorf("%s = %q, %v; want an entry %q", p, raw, err, want)
		}
	}
}

func TestCRILogWithoutPathDiscards(t *testing.T) {
	l, err := openCRILog("", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	l.copyStream(strings.NewReader("dropped\n"), "stdout")
	l.close()
}
