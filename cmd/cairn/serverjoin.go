package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"cairn/internal/bootstrap"
	"cairn/internal/pki"
	"cairn/raftstore"

	"k8s.io/client-go/kubernetes"
)

// tokenFile is where every server keeps a join token with server
// permission, DATA/token, for operators to hand to new machines.
const tokenFile = "token"

// serverUser is the identity a server uses on its own API for its own
// housekeeping (its join token).
const serverUser = "system:cairn-server"

// joinWithToken prepares `cairn server --join https://HOST:6443 --token T`:
// it fetches the cluster CA into pkiDir, checked against the token, and
// returns the store URL to join through. A data dir that already belongs
// to a member restarts from its data and needs neither the API server nor
// the token (which may have expired since).
func joinWithToken(cfg raftstore.Config, token, pkiDir string, log *slog.Logger) (string, error) {
	if cfg.Join == "" {
		return "", errors.New("--token goes with --join https://HOST:6443, the API server of a running server")
	}
	tok, err := bootstrap.ParseToken(token)
	if err != nil {
		return "", fmt.Errorf("--token: %w", err)
	}
	member, err := raftstore.HasMember(cfg.DataDir)
	if err != nil {
		return "", err
	}
	if member {
		if ca, err := pki.LoadCA(pkiDir); err == nil && ca.Fingerprint() != tok.CAHash {
			log.Warn("--token pins another CA than the one in --pki-dir; restarting with the data dir's cluster anyway", "pki_dir", pkiDir)
		}
		return cfg.Join, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	members, err := bootstrap.JoinServer(ctx, cfg.Join, tok, pkiDir)
	if err != nil {
		return "", fmt.Errorf("--join %s: %w", cfg.Join, err)
	}
	for _, m := range members {
		if m.Name != cfg.Name && len(m.ClientURLs) > 0 {
			log.Info("fetched the cluster CA with the join token; joining the store", "via", cfg.Join, "store", m.ClientURLs[0], "pki_dir", pkiDir)
			return m.ClientURLs[0], nil
		}
	}
	return "", fmt.Errorf("--join %s: the cluster lists no store member to join through", cfg.Join)
}

// defaultJoinPKIDir is where a server joining with a token keeps the CA
// when --pki-dir is not given.
func defaultJoinPKIDir(dataDir string) string { return filepath.Join(dataDir, "pki") }

// storeMembers lists the store members for the API server's bootstrap
// endpoints, this server's own first: a joiner reaches that one for sure.
func storeMembers(srv *raftstore.Server) func(context.Context) ([]bootstrap.StoreMember, error) {
	return func(context.Context) ([]bootstrap.StoreMember, error) {
		list, err := srv.Members()
		if err != nil {
			return nil, err
		}
		var out []bootstrap.StoreMember
		for _, m := range list {
			sm := bootstrap.StoreMember{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), ClientURLs: m.ClientURLs, PeerURLs: m.PeerURLs, Learner: m.IsLearner}
			if m.ID == srv.MemberID() {
				out = append([]bootstrap.StoreMember{sm}, out...)
			} else {
				out = append(out, sm)
			}
		}
		return out, nil
	}
}

// ensureServerToken writes DATA/token once the API can store tokens,
// retrying until it can or ctx ends.
func ensureServerToken(ctx context.Context, ca *pki.CA, apiURL, dataDir string, log *slog.Logger) {
	path := filepath.Join(dataDir, tokenFile)
	rc, err := loopbackConfig(ca, apiURL, serverUser, []string{pki.AdminOrganization})
	if err != nil {
		log.Error("cannot write the join token", "path", path, "err", err)
		return
	}
	rc.QPS, rc.Burst = 5, 10
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		log.Error("cannot write the join token", "path", path, "err", err)
		return
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		tok, err := bootstrap.EnsureServerToken(tctx, cs, ca.Fingerprint(), path)
		cancel()
		if err == nil {
			log.Info("join token ready: add servers with `cairn server --join https://THIS-API:6443 --token $(cat "+path+")`, agents with `cairn agent --server https://THIS-API:6443 --token ...`",
				"path", path, "token_id", tok.ID)
			return
		}
		log.Debug("writing the join token failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
