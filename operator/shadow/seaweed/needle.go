package seaweed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Write stores content as the needle fid on the volume server at url (a
// raw PUT body: the volume server parses multipart forms on POST only).
// The server answers once every replica of the volume holds it.
func Write(ctx context.Context, hc *http.Client, url string, fid FileID, content []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+url+"/"+fid.String(), bytes.NewReader(content))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ans, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		Size  int    `json:"size"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(ans, &out)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("write %s: HTTP %d: %.200s", fid, resp.StatusCode, ans)
	}
	if out.Error != "" {
		return fmt.Errorf("write %s: %s", fid, out.Error)
	}
	if out.Size != len(content) {
		return fmt.Errorf("write %s: volume server stored %d bytes of %d", fid, out.Size, len(content))
	}
	return nil
}

// Stat asks the volume server at url for needle fid's size (a HEAD): the
// proof that this copy holds it.
func Stat(ctx context.Context, hc *http.Client, url string, fid FileID) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+url+"/"+fid.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("stat %s on %s: HTTP %d", fid, url, resp.StatusCode)
	}
	n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat %s on %s: Content-Length %q", fid, url, resp.Header.Get("Content-Length"))
	}
	return n, nil
}
