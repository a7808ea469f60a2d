package privtest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// AddAddr assigns an address to the namespace's loopback interface, for
// servers that need an address the API accepts in an EndpointSlice
// (loopback addresses are refused there). Use a /32 or /128 so that no
// other address becomes local.
func (n *Netns) AddAddr(p netip.Prefix) error {
	return n.Do(func() error { return addAddr("lo", p) })
}

// addAddr sends one RTM_NEWADDR request over rtnetlink and waits for the
// kernel's acknowledgement.
func addAddr(ifname string, p netip.Prefix) error {
	ifi, err := ifIndex(ifname)
	if err != nil {
		return err
	}
	family := unix.AF_INET
	if p.Addr().Is6() {
		family = unix.AF_INET6
	}
	addr := p.Addr().AsSlice()
	attr := func(typ uint16, data []byte) []byte {
		b := make([]byte, unix.SizeofRtAttr, unix.SizeofRtAttr+len(data))
		binary.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(data)))
		binary.NativeEndian.PutUint16(b[2:], typ)
		return append(b, data...) // addresses are 4 or 16 bytes: already aligned
	}
	body := []byte{byte(family), byte(p.Bits()), 0, unix.RT_SCOPE_HOST, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(body[4:], uint32(ifi))
	body = append(body, attr(unix.IFA_LOCAL, addr)...)
	body = append(body, attr(unix.IFA_ADDRESS, addr)...)

	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.NLMSG_HDRLEN+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWADDR)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)

	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	nr, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:nr])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return fmt.Errorf("add address %v to %s: %w", p, ifname, unix.Errno(-code))
			}
			return nil
		}
	}
	return fmt.Errorf("add address %v to %s: no acknowledgement", p, ifname)
}

func ifIndex(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}
