package plugins_test

import (
	"testing"

	"cairn/scheduler/plugins"
	"cairn/scheduler/plugins/names"
)

func TestEveryNamedPluginHasAFactoryOfThatName(t *testing.T) {
	reg := plugins.NewRegistry()
	if len(reg) != len(names.All()) {
		t.Errorf("%d factories for %d names", len(reg), len(names.All()))
	}
	for _, n := range names.All() {
		f, ok := reg[n]
		if !ok {
			t.Errorf("no factory for %s", n)
			continue
		}
		pl, err := f(nil)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Name() != n {
			t.Errorf("factory %s builds plugin %s", n, pl.Name())
		}
	}
}
