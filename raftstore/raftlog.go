package raftstore

import (
	"context"
	"io"
	"log"
	"log/slog"

	hclog "github.com/hashicorp/go-hclog"
)

// raftLogger routes hashicorp/raft's logs into the server's slog logger,
// so that every line shares one format. Raft's own info lines are chatty
// and the server logs the transitions that matter, so they go to debug.
type raftLogger struct {
	log  *slog.Logger
	name string
	args []interface{}
}

func newRaftLogger(l *slog.Logger) hclog.Logger {
	return &raftLogger{log: l.With("component", "raft"), name: "raft"}
}

func (r *raftLogger) slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug, hclog.Info:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (r *raftLogger) Log(level hclog.Level, msg string, args ...interface{}) {
	lvl := r.slogLevel(level)
	if !r.log.Enabled(context.Background(), lvl) {
		return
	}
	r.log.Log(context.Background(), lvl, msg, append(append([]interface{}{}, r.args...), args...)...)
}

func (r *raftLogger) Trace(msg string, args ...interface{}) { r.Log(hclog.Trace, msg, args...) }
func (r *raftLogger) Debug(msg string, args ...interface{}) { r.Log(hclog.Debug, msg, args...) }
func (r *raftLogger) Info(msg string, args ...interface{})  { r.Log(hclog.Info, msg, args...) }
func (r *raftLogger) Warn(msg string, args ...interface{})  { r.Log(hclog.Warn, msg, args...) }
func (r *raftLogger) Error(msg string, args ...interface{}) { r.Log(hclog.Error, msg, args...) }

func (r *raftLogger) enabled(level hclog.Level) bool {
	return r.log.Enabled(context.Background(), r.slogLevel(level))
}

func (r *raftLogger) IsTrace() bool { return r.enabled(hclog.Trace) }
func (r *raftLogger) IsDebug() bool { return r.enabled(hclog.Debug) }
func (r *raftLogger) IsInfo() bool  { return r.enabled(hclog.Info) }
func (r *raftLogger) IsWarn() bool  { return r.enabled(hclog.Warn) }
func (r *raftLogger) IsError() bool { return r.enabled(hclog.Error) }

func (r *raftLogger) ImpliedArgs() []interface{} { return r.args }

func (r *raftLogger) With(args ...interface{}) hclog.Logger {
	c := *r
	c.args = append(append([]interface{}{}, r.args...), args...)
	return &c
}

func (r *raftLogger) Name() string { return r.name }

func (r *raftLogger) Named(name string) hclog.Logger {
	c := *r
	c.name = r.name + "." + name
	c.log = r.log.With("subsystem", name)
	return &c
}

func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *r
	c.name = name
	return &c
}

// SetLevel is a no-op: the level comes from the server's logger.
func (r *raftLogger) SetLevel(hclog.Level) {}

func (r *raftLogger) GetLevel() hclog.Level {
	switch {
	case r.IsDebug():
		return hclog.Debug
	case r.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}

func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

func (r *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		r.Warn(string(p))
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
