package deploy

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// systemctl runs a systemctl command line for machine m.
func (l *lab) systemctl(m *machine, args []string, out io.Writer) int {
	var verb string
	var units []string
	now := false
	sig := syscall.SIGTERM
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--now":
			now = true
		case a == "-s" || a == "--signal":
			i++
			if i < len(args) {
				sig = signalNamed(args[i])
			}
		case strings.HasPrefix(a, "--signal="):
			sig = signalNamed(strings.TrimPrefix(a, "--signal="))
		case strings.HasPrefix(a, "-"):
		case verb == "":
			verb = a
		default:
			units = append(units, a)
		}
	}
	fail := func(err error) int {
		fmt.Fprintln(out, err)
		return 1
	}
	code := 0
	switch verb {
	case "daemon-reload":
	case "enable", "disable", "start", "stop", "restart", "reload", "kill":
		for _, name := range units {
			u := m.unit(name)
			var err error
			switch {
			case verb == "start" || verb == "enable" && now:
				err = u.start()
			case verb == "stop" || verb == "disable" && now:
				err = u.stop()
			case verb == "restart" || verb == "reload":
				// A reload is a restart here: only HAProxy is reloaded,
				// and its clients retry.
				if err = u.stop(); err == nil {
					err = u.start()
				}
			case verb == "kill":
				l.record(m, u.name, "signal "+sig.String())
				u.signal(sig, false)
			}
			if err != nil {
				return fail(err)
			}
		}
	case "is-active", "status":
		for _, name := range units {
			u := m.unit(name)
			state := "inactive"
			if u.running() {
				state = "active"
			} else {
				code = 3
			}
			if verb == "is-active" {
				fmt.Fprintln(out, state)
				continue
			}
			fmt.Fprintf(out, "● %s.service on %s\n     Active: %s\n%s\n", u.name, m.name, state, tail(u.logPath(), 10))
		}
	default:
		return fail(fmt.Errorf("lab: systemctl %s is not something the lab does", verb))
	}
	return code
}

// journalctl prints a unit's log: journalctl -u UNIT [-n N].
func (l *lab) journalctl(m *machine, args []string, out io.Writer) int {
	var name string
	n := -1
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-u" && i+1 < len(args):
			i++
			name = args[i]
		case a == "-n" && i+1 < len(args):
			i++
			n, _ = strconv.Atoi(args[i])
		}
	}
	if name == "" {
		fmt.Fprintln(out, "lab: journalctl needs -u UNIT")
		return 1
	}
	path := m.unit(name).logPath()
	if n >= 0 {
		fmt.Fprintln(out, tail(path, n))
		return 0
	}
	fmt.Fprintln(out, strings.Join(readLines(path), "\n"))
	return 0
}

// signalNamed parses KILL, SIGKILL, 9 and the like.
func signalNamed(s string) syscall.Signal {
	if n, err := strconv.Atoi(s); err == nil {
		return syscall.Signal(n)
	}
	switch strings.TrimPrefix(strings.ToUpper(s), "SIG") {
	case "KILL":
		return syscall.SIGKILL
	case "STOP":
		return syscall.SIGSTOP
	case "CONT":
		return syscall.SIGCONT
	case "HUP":
		return syscall.SIGHUP
	case "INT":
		return syscall.SIGINT
	}
	return syscall.SIGTERM
}

// serveControl answers the shell functions of the machines' commands: one
// connection per call, a tab-separated line "MACHINE COMMAND ARGS...", then
// the command's output and a last line "lab-exit CODE".
func (l *lab) serveControl() {
	for {
		conn, err := l.ctl.Accept()
		if err != nil {
			return
		}
		go l.handleControl(conn)
	}
}

func (l *lab) handleControl(conn net.Conn) {
	defer conn.Close()
	line, err := readLine(conn)
	if err != nil {
		return
	}
	f := strings.Split(strings.TrimSuffix(line, "\t"), "\t")
	code := 1
	l.mu.Lock()
	m := l.machines[f[0]]
	l.mu.Unlock()
	switch {
	case m == nil || len(f) < 2:
		fmt.Fprintf(conn, "lab: bad control call %q\n", line)
	case f[1] == "systemctl":
		code = l.systemctl(m, f[2:], conn)
	case f[1] == "journalctl":
		code = l.journalctl(m, f[2:], conn)
	case f[1] == "render" && len(f) == 4:
		// The configuration file a unit would read, for a command that
		// checks it (haproxy -c).
		path, err := m.unit(f[2]).render(f[3])
		if err != nil {
			fmt.Fprintln(conn, err)
			break
		}
		fmt.Fprintln(conn, path)
		code = 0
	default:
		fmt.Fprintf(conn, "lab: no command %q\n", f[1])
	}
	fmt.Fprintf(conn, "lab-exit %d\n", code)
}

// readLine reads one newline-terminated line, byte by byte so that
// nothing after it is consumed.
func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := io.ReadFull(r, one); err != nil {
			return "", err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}
