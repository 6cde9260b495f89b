package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Identify names the emulator at url: "localstack" or "moto". Tests whose
// expectations differ between the two (docs/localstack.md lists each
// difference) ask it which one serves a service.
func Identify(ctx context.Context, url string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	if checkHealthAny(ctx, client, url) {
		return "localstack", nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/", nil)
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("emulator: identify %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return "moto", nil
	}
	return "", fmt.Errorf("emulator: %s is neither LocalStack nor moto (GET /moto-api/: %d)", url, resp.StatusCode)
}

// checkHealthAny reports whether url answers LocalStack's health endpoint.
func checkHealthAny(ctx context.Context, client *http.Client, url string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_localstack/health", nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var health struct {
		Version string `json:"version"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&health) == nil && health.Version != ""
}
