package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// NotPeerError is returned by a peer connection's handshake when the other
// end holds a certificate from the cluster CA that is not a peer
// certificate, such as the admin client certificate.
type NotPeerError struct {
	// Subject is the refused certificate's subject, empty when there was none.
	Subject string
}

// Error implements error.
func (e *NotPeerError) Error() string {
	if e.Subject == "" {
		return "pki: no peer certificate presented"
	}
	return fmt.Sprintf("pki: %s is not a peer certificate (O=%s missing)", e.Subject, PeerOrganization)
}

// Describe turns a TLS handshake or certificate verification error into a
// reason an operator can act on, for log lines and error messages. Errors
// it does not recognise are returned as their own text.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		notPeer   *NotPeerError
		notTLS    tls.RecordHeaderError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &notPeer):
		if notPeer.Subject == "" {
			return "no peer certificate presented"
		}
		return fmt.Sprintf("not a peer certificate (O=%s missing; got %s)", PeerOrganization, notPeer.Subject)
	case errors.As(err, &unknownCA):
		return "certificate signed by a different CA (another cluster's PKI dir?)" + subjectOf(unknownCA.Cert)
	case errors.As(err, &invalid):
		return describeInvalid(invalid)
	case errors.As(err, &hostname):
		return fmt.Sprintf("certificate not valid for %s (it names %s); advertise an address that is in the certificate",
			hostname.Host, certNames(hostname.Certificate))
	case errors.As(err, &notTLS):
		return "not a TLS handshake (a client in --insecure mode talking to a TLS port?)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed during the TLS handshake"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "TLS handshake timed out"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "client didn't provide a certificate"):
		return "no client certificate presented (pass --cert and --key)"
	case strings.Contains(msg, "remote error: tls: unknown certificate authority"):
		return "the other side does not trust our certificate: it was signed by a different CA (another cluster's PKI dir?)"
	case strings.Contains(msg, "remote error: tls: bad certificate"):
		return "the other side refused our certificate (different CA, or not a peer certificate?)"
	case strings.Contains(msg, "remote error: tls: certificate required"):
		return "the other side requires a client certificate and we presented none"
	case strings.Contains(msg, "remote error: tls: certificate expired"):
		return "the other side says our certificate expired"
	case strings.Contains(msg, "server gave HTTP response"):
		return "the server does not speak TLS (is it running with --insecure?)"
	}
	return msg
}

func describeInvalid(e x509.CertificateInvalidError) string {
	switch e.Reason {
	case x509.Expired:
		// x509 uses one reason for both ends of the validity window.
		if strings.Contains(e.Detail, "is before") {
			return "certificate not yet valid (is a clock behind?)" + subjectOf(e.Cert)
		}
		return "certificate expired" + subjectOf(e.Cert) + ": mint a new one from the cluster CA"
	case x509.NotAuthorizedToSign:
		return "certificate issuer is not a CA" + subjectOf(e.Cert)
	case x509.IncompatibleUsage:
		return "certificate not valid for this use (a client certificate used by a server, or the reverse)" + subjectOf(e.Cert)
	}
	return "invalid certificate: " + e.Error()
}

func subjectOf(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	return fmt.Sprintf(" [subject %s, issuer %s]", cert.Subject, cert.Issuer)
}

func certNames(cert *x509.Certificate) string {
	if cert == nil {
		return "no names"
	}
	var names []string
	names = append(names, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no names"
	}
	return strings.Join(names, ", ")
}
