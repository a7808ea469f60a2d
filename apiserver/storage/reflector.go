package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// errNeedRelist means the store no longer holds the revision the cache
// needs to resume from.
var errNeedRelist = errors.New("storage: store watch revision compacted")

// Backoff between attempts to reach the store.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// reflect keeps the cache in step with the store until ctx ends: list,
// then watch from the list's revision; a broken watch resumes from the
// last revision seen, and only a compacted one leads to a new list.
func (s *Store) reflect(ctx context.Context) {
	defer s.cache.stop()
	backoff := minBackoff
	for ctx.Err() == nil {
		rev, err := s.relist(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("watch cache list failed, retrying", "err", err, "backoff", backoff)
			}
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		s.log.Debug("watch cache listed", "revision", rev, "objects", s.cache.count())
		if err := s.watchFrom(ctx, rev); ctx.Err() == nil {
			s.log.Info("watch cache re-listing", "reason", err)
		}
	}
}

// relist reads every object of the prefix at one revision, page by page,
// and installs them in the cache.
func (s *Store) relist(ctx context.Context) (int64, error) {
	tree := btree.NewG(32, entryLess)
	key, end := keyRange(s.prefix + "/")
	var rev int64
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.opts.RelistPageSize)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.b.KV.Get(ctx, key, opts...)
		if err != nil {
			return 0, fmt.Errorf("storage: listing %s: %w", s.prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			obj, err := s.codec.Decode(kv.Value)
			if err != nil {
				s.log.Error("skipping undecodable object", "key", string(kv.Key), "err", err)
				continue
			}
			setResourceVersion(obj, kv.ModRevision)
			tree.ReplaceOrInsert(&entry{key: string(kv.Key), obj: obj})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	s.cache.replace(tree, rev)
	return rev, nil
}

// watchFrom feeds the cache from a store watch starting after rev,
// resuming after breaks (a lost leader, a replica going away) from the
// last revision seen so that no event is lost. It returns when ctx ends or
// when the store has compacted the revision to resume from.
func (s *Store) watchFrom(ctx context.Context, rev int64) error {
	last := rev
	backoff := minBackoff
	for {
		wctx, cancel := context.WithCancel(s.watchCtx)
		wch := s.b.Watcher.Watch(wctx, s.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(last+1), clientv3.WithProgressNotify())
		seen, err := s.consume(wch, last)
		cancel()
		if errors.Is(err, errNeedRelist) || ctx.Err() != nil {
			return err
		}
		if seen > last {
			backoff = minBackoff
		}
		last = seen
		s.log.Info("store watch broke, resuming", "after", last, "err", err, "backoff", backoff)
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxBackoff)
	}
}

// consume applies a store watch's responses to the cache and returns the
// last revision it reflects once the watch ends, with why it ended.
func (s *Store) consume(wch clientv3.WatchChan, last int64) (int64, error) {
	for wr := range wch {
		if wr.CompactRevision != 0 || errors.Is(wr.Err(), rpctypes.ErrCompacted) {
			return last, errNeedRelist
		}
		if err := wr.Err(); err != nil {
			return last, err
		}
		if wr.IsProgressNotify() {
			s.cache.progress(wr.Header.Revision)
			last = max(last, wr.Header.Revision)
			continue
		}
		if len(wr.Events) == 0 {
			continue
		}
		changes := make([]change, 0, len(wr.Events))
		for _, ev := range wr.Events {
			ch := change{key: string(ev.Kv.Key), rev: ev.Kv.ModRevision}
			if ev.Type == mvccpb.PUT {
				obj, err := s.codec.Decode(ev.Kv.Value)
				if err != nil {
					s.log.Error("skipping undecodable object", "key", ch.key, "err", err)
					// Leave the old state in place: a reader sees a stale
					// object rather than one missing without a DELETED.
					ch.skip = true
				}
				if obj != nil {
					setResourceVersion(obj, ch.rev)
					ch.obj = obj
				}
			}
			changes = append(changes, ch)
			last = max(last, ch.rev)
		}
		s.cache.apply(changes)
	}
	return last, errors.New("storage: store watch closed")
}

// progressLoop asks the store for progress notifications while readers
// wait for the cache to reach a revision, and sends bookmarks.
func (s *Store) progressLoop(ctx context.Context) {
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	bookmarks := time.NewTicker(s.opts.BookmarkInterval)
	defer bookmarks.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-poll.C:
			if !s.cache.hasWaiters() {
				continue
			}
		case <-bookmarks.C:
			s.cache.bookmark(s.newFunc, s.codec.gvk)
		}
		// Bookmarks also ask for progress, so the next one carries a
		// revision as recent as the store's even when the prefix is quiet.
		if err := s.b.Watcher.RequestProgress(s.watchCtx); err != nil && ctx.Err() == nil {
			s.log.Debug("store progress request failed", "err", err)
		}
	}
}

// requestProgress asks the progress loop for a progress notification.
func (s *Store) requestProgress() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// currentRevision returns the store's revision through a linearizable
// read, the point a consistent read must reflect.
func (s *Store) currentRevision(ctx context.Context) (int64, error) {
	resp, err := s.b.KV.Get(ctx, s.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, storeError(err)
	}
	return resp.Header.Revision, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
