// Package privtest gates and equips tests that need privileges (root or
// capabilities, cgroups, network namespaces, bpffs).
//
// Such tests skip, saying what is missing, unless CAIRN_REQUIRE_PRIVILEGED=1
// is set, as in CI: then they fail instead, so a runner that lost its
// privileges cannot turn the suite green by skipping it.
package privtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// EnvRequire names the environment variable that turns skips into failures.
const EnvRequire = "CAIRN_REQUIRE_PRIVILEGED"

// Strict reports whether privileged tests must run rather than skip.
func Strict() bool { return os.Getenv(EnvRequire) == "1" }

// Unavailable ends the test because something it needs is missing: it
// skips, or fails when Strict. The message should name what is missing.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("%s (required: %s=1)", msg, EnvRequire)
	}
	t.Skipf("%s (set %s=1 to fail instead)", msg, EnvRequire)
}

// Capability is a Linux capability number, as in linux/capability.h.
type Capability uint

// The capabilities Cairn's privileged tests ask for.
const (
	CapNetBindService Capability = 10
	CapNetAdmin       Capability = 12
	CapSysAdmin       Capability = 21
	CapBPF            Capability = 39
)

// String returns the capability's name.
func (c Capability) String() string {
	switch c {
	case CapNetBindService:
		return "CAP_NET_BIND_SERVICE"
	case CapNetAdmin:
		return "CAP_NET_ADMIN"
	case CapSysAdmin:
		return "CAP_SYS_ADMIN"
	case CapBPF:
		return "CAP_BPF"
	}
	return "CAP_" + strconv.Itoa(int(c))
}

// Require ends the test through Unavailable unless the process holds all
// the given capabilities in its effective set.
func Require(t testing.TB, caps ...Capability) {
	t.Helper()
	eff, err := effectiveCaps()
	if err != nil {
		Unavailable(t, "cannot read capabilities: %v", err)
		return
	}
	var missing []string
	for _, c := range caps {
		if eff&(1<<c) == 0 {
			missing = append(missing, c.String())
		}
	}
	if len(missing) > 0 {
		Unavailable(t, "needs %s (run as root)", strings.Join(missing, ", "))
	}
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}
