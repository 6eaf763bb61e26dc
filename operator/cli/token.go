package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/vm/config"
)

// TokenEnv names the environment variable holding the write token.
const TokenEnv = "SCHAIN_TOKEN"

// token resolves the write token: --token-file, else --token, else
// $SCHAIN_TOKEN, else the token of the local network (under the build
// directory) when --chain is that network's chain. Empty means none: reads
// work, writes are refused by the node.
func (g *Globals) resolveToken() (string, error) {
	switch {
	case g.tokenFile != "":
		tok, err := ReadToken(g.tokenFile)
		if err != nil {
			return "", UsageError{fmt.Errorf("--token-file: %w", err)}
		}
		warnReadableByOthers(g, g.tokenFile)
		return tok, nil
	case g.token != "":
		return g.token, nil
	case os.Getenv(TokenEnv) != "":
		return os.Getenv(TokenEnv), nil
	}
	return localToken(g.Chain), nil
}

// localToken is the local network's token if chain is its chain (schain-dev
// only).
func localToken(chain string) string {
	if dev.LocalToken == nil {
		return ""
	}
	return dev.LocalToken(chain)
}

// ReadToken reads a token file (surrounding whitespace trimmed).
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

func warnReadableByOthers(g *Globals, path string) {
	if info, err := os.Stat(path); err == nil && info.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(g.ErrOut, "warning: token file %s is readable by others (mode %v); chmod 600 it\n", path, info.Mode().Perm())
	}
}

func newTokenCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage the write tokens that let a client make a node sign",
	}
	var name, out, ranges, methods string
	newCmd := &cobra.Command{
		Use:   "new --name NAME --ranges PATTERNS [--methods METHODS] [--out FILE]",
		Short: "Print a fresh random write token and its chain config entry",
		Long: `Print a fresh random write token (256 bits) and the entry to add to
"writeTokens" in each node's chain config: the node stores only the token's
SHA-256, and uses NAME in its logs and metrics. Restart the node to apply;
revoke a token by removing its entry and restarting.

The token may call --methods (comma-separated JSON-RPC names; "*" for every
write method, future ones included) on the ranges --ranges covers
(comma-separated patterns: "a/b" that range, "a/*" every range below a/,
"*" every range). A "*" never stands for a SeaweedFS prefix's floor,
key-band or volume ranges (a segment named floor, keys or volumes): name
them, as the cutover tool's token does ("prod-eu1/floor/*") and the
masters' token does ("prod-eu1/keys/*,prod-eu1/volumes"). A call outside the scope is refused
with code -32019 naming what is missing (exit code 10).

Keep the token secret: give it to clients with --token-file FILE or
$` + TokenEnv + ` (--token shows it in the process list). With --out, the token
is written to FILE (mode 0600, never overwritten) instead of printed.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(_ *cobra.Command, _ []string) error {
			tok, err := config.GenerateToken()
			if err != nil {
				return err
			}
			entry, err := config.NewWriteToken(name, tok, config.ParseList(ranges), config.ParseList(methods))
			if err != nil {
				return UsageError{fmt.Errorf("token: %w", err)}
			}
			type result struct {
				Name      string            `json:"name"`
				Token     string            `json:"token,omitempty"`
				TokenFile string            `json:"tokenFile,omitempty"`
				SHA256    string            `json:"sha256"`
				Config    config.WriteToken `json:"config"`
			}
			res := result{Name: name, SHA256: entry.SHA256, Config: entry}
			if out != "" {
				if err := writeNewTokenFile(out, tok); err != nil {
					return err
				}
				res.TokenFile = out
			} else {
				res.Token = tok
			}
			b, err := json.Marshal(entry)
			if err != nil {
				return err
			}
			snippet := string(b)
			fs := []Field{{"name", name}}
			if out != "" {
				fs = append(fs, Field{"token file", out})
			} else {
				fs = append(fs, Field{"token", tok})
			}
			fs = append(fs, Field{"sha256", entry.SHA256}, Field{"config", snippet})
			if err := g.Emit(res, fs); err != nil {
				return err
			}
			if !g.JSON {
				fmt.Fprintf(g.ErrOut, "add the config entry to \"writeTokens\" in each node's chain config (<chain-config-dir>/<chainID>/config.json) and restart the node\n")
			}
			return nil
		},
	}
	newCmd.Flags().StringVar(&name, "name", "", "the token holder's name, for logs and metrics (A-Z a-z 0-9 . _ -)")
	newCmd.Flags().StringVar(&out, "out", "", "write the token to this new file (mode 0600) instead of printing it")
	newCmd.Flags().StringVar(&ranges, "ranges", "", `range patterns the token may write, comma-separated ("prod-eu1/*", "prod-eu1/floor/*")`)
	newCmd.Flags().StringVar(&methods, "methods", "allocate,allocateBatch,putManifest", `write methods the token may call, comma-separated ("*": every write method)`)
	MustMarkRequired(newCmd, "name")
	MustMarkRequired(newCmd, "ranges")
	cmd.AddCommand(newCmd)
	return cmd
}

func writeNewTokenFile(path, tok string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return UsageError{fmt.Errorf("--out: %w", err)}
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
