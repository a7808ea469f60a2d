package demoapp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// GetOptions says how Get asks.
type GetOptions struct {
	// Count is the number of requests, each on a new connection so that a
	// Service spreads them over its endpoints; at least 1.
	Count int
	// Timeout bounds each attempt.
	Timeout time.Duration
	// RetryFor is how long a failing request is retried, for a Service
	// whose endpoints are still coming up.
	RetryFor time.Duration
}

// Get sends opts.Count GET requests to url and writes each answer's body
// to w. It fails on the first request that still fails after RetryFor.
func Get(ctx context.Context, url string, opts GetOptions, w io.Writer) error {
	if opts.Count < 1 {
		opts.Count = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	client := &http.Client{
		Timeout:   opts.Timeout,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	for i := 0; i < opts.Count; i++ {
		body, err := getRetrying(ctx, client, url, opts.RetryFor)
		if err != nil {
			return err
		}
		if _, err := w.Write(body); err != nil {
			return err
		}
	}
	return nil
}

func getRetrying(ctx context.Context, client *http.Client, url string, retryFor time.Duration) ([]byte, error) {
	deadline := time.Now().Add(retryFor)
	for {
		body, err := getOnce(ctx, client, url)
		if err == nil {
			return body, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func getOnce(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("demoapp: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("demoapp: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("demoapp: GET %s: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("demoapp: GET %s: %s", url, resp.Status)
	}
	return body, nil
}
