package transport

import (
	"context"
	"crypto/tls"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// GRPCDialer returns the dial options for reaching a peer's internal gRPC
// service on its peer port: TLS with clientTLS (nil means plaintext) and,
// when sourceIP is not nil, connections bound to that source address, as
// NewStreamLayer does for raft.
func GRPCDialer(clientTLS *tls.Config, sourceIP net.IP) []grpc.DialOption {
	d := newDialer(sourceIP)
	creds := insecure.NewCredentials()
	if clientTLS != nil {
		creds = credentials.NewTLS(clientTLS)
	}
	return []grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}),
		grpc.WithTransportCredentials(creds),
	}
}
