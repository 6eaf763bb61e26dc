package seaweed

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBody bounds what is read of a master's or volume server's answer (a
// large cluster's /vol/status included).
const maxBody = 16 << 20

var httpClient = &http.Client{Timeout: 10 * time.Second}

// Get fetches url from a SeaweedFS server (a master's or volume server's
// status, say); a status other than 200 is an error with the body's start.
func Get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, &StatusError{url: url, code: resp.StatusCode, body: body}
	}
	return body, nil
}

// StatusError is an answer other than 200 to Get.
type StatusError struct {
	url  string
	code int
	body []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d: %.200s", e.url, e.code, e.body)
}
