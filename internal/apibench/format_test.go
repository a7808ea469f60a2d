package apibench

import (
	"testing"
	"time"
)

func TestFormatDurationKeepsThreeDigits(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{1500 * time.Nanosecond, "1.50µs"},
		{999 * time.Microsecond, "999µs"},
		{20812 * time.Microsecond, "20.8ms"},
		{999900 * time.Microsecond, "1.00s"},
		{999600 * time.Nanosecond, "1.00ms"},
		{time.Second, "1.00s"},
		{105 * time.Second, "105s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatDuration(tt.d); got != tt.want {
				t.Errorf("FormatDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestFormatBytesInMiB(t *testing.T) {
	tests := []struct {
		b    uint64
		want string
	}{
		{0, "0 MiB"},
		{500 << 20, "500 MiB"},
		{293601280, "280 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatBytes(tt.b); got != tt.want {
				t.Errorf("FormatBytes(%d) = %q, want %q", tt.b, got, tt.want)
			}
		})
	}
}
