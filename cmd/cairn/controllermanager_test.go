package main

import (
	"slices"
	"testing"

	"cairn/controllers"
)

func TestDisabledControllersReadsTheKubernetesSyntax(t *testing.T) {
	descs := []controllers.Descriptor{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		flag []string
		want []string
	}{
		{[]string{"*"}, nil},
		{[]string{"*", "-b"}, []string{"b"}},
		{[]string{"a"}, []string{"b", "c"}},
		{[]string{"a", "c"}, []string{"b"}},
	} {
		got, err := disabledControllers(tc.flag, descs)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("--controllers %v: disabled %v, %v; want %v", tc.flag, got, err, tc.want)
		}
	}
	if _, err := disabledControllers([]string{"*", "-nope"}, descs); err == nil {
		t.Error("an unknown controller was accepted")
	}
}
