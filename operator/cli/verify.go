package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/finality"
	"github.com/s-chain/schain/operator/subnet"
)

func newVerifyCmd(g *Globals) *cobra.Command {
	var (
		height       uint64
		pchain       string
		setFile      string
		saveSet      string
		networkID    uint32
		createdAt    uint64
		waitForFinal bool
	)
	cmd := &cobra.Command{
		Use:   "verify (TXID | --height H) [--pchain URI | --validators FILE] [--save-validators FILE] [--wait]",
		Short: "Check a receipt's or a block's finality certificate against the P-chain's validator set",
		Long: `Check, trusting no S-Chain node, that a transaction (or the block at a height)
is final: its finality certificate carries the BLS signatures of validators
holding more than 2/3 of the stake of the subnet's P-chain validator set at
the certificate's P-chain height, over this chain's block; and, when the
certificate is over a later block, the blocks in between (fetched from any
node, each checked against the hash its child names) link it down to the
block that carries the transaction.

The validator set comes from the P-chain of --pchain (default: the first
--rpc node; point it at a node you trust), or from --validators FILE (a set
saved with --save-validators, or written by hand: {"networkID", "subnetID",
"pChainHeight", "chainCreatedAt", "validators": [{"nodeID", "publicKey",
"weight"}]}).

A certificate below the P-chain height the chain was created at is refused:
subnet validators join one at a time, and at earlier heights one of them may
hold all of the subnet's stake. That height is the P-chain block holding the
chain's CreateChainTx, read from the same P-chain (--chain-created-at gives
it instead, a saved set carries it); never from an S-Chain node.

Exit codes: 0 verified, 5 not final yet (retry, or pass --wait), 9 the
certificate or its proof does not check out (the reason is printed).`,
		Args: func(cmd *cobra.Command, args []string) error {
			byHeight := cmd.Flags().Changed("height")
			if (len(args) == 1) == byHeight {
				return UsageError{errors.New("give a TXID or --height, not both")}
			}
			if setFile != "" && pchain != "" {
				return UsageError{errors.New("--validators and --pchain both name where the validator set comes from: give one")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, argv []string) error {
			return g.WithRouter(cmd, func(ctx context.Context, r *client.Router) error {
				chainID, err := g.chainIDOf(ctx, r)
				if err != nil {
					return err
				}
				var (
					cert   *certificate.Certificate
					target uint64
					rc     *api.ReceiptReply
				)
				if len(argv) == 1 {
					txID, err := parseID(argv[0])
					if err != nil {
						return UsageError{err}
					}
					if waitForFinal {
						rc, err = r.WaitFinal(ctx, txID)
					} else {
						rc, err = r.GetReceipt(ctx, txID)
					}
					if err != nil {
						return err
					}
					if !rc.Final || rc.Certificate == nil {
						return fmt.Errorf("%w: transaction %s is %s and no certificate covers it yet (retry, or pass --wait)", finality.ErrNotFinal, txID, rc.Status)
					}
					if cert, err = certificate.FromAPI(*rc.Certificate); err != nil {
						return verifyError{err}
					}
					target = rc.Height
				} else {
					reply, err := r.GetCertificate(ctx, height)
					if err != nil {
						return err
					}
					if cert, err = certificate.FromAPI(reply.Certificate); err != nil {
						return verifyError{err}
					}
					target = height
				}

				vs, err := g.validatorSet(ctx, r, cert, chainID, pchain, setFile, networkID, createdAt)
				if err != nil {
					return err
				}
				if saveSet != "" {
					if err := writeJSONFile(saveSet, vs); err != nil {
						return err
					}
				}
				var proof finality.Proof
				if rc != nil {
					proof, err = finality.ProveReceipt(ctx, r.GetBlock, rc, vs.NetworkID, chainID, vs)
				} else {
					proof, _, err = finality.ProveBlock(ctx, r.GetBlock, cert, target, vs.NetworkID, chainID, vs)
				}
				if err != nil {
					return verifyError{err}
				}
				fs := []Field{}
				if rc != nil {
					fs = append(fs, Field{"txID", rc.TxID})
				}
				fs = append(fs,
					Field{"height", target},
					Field{"certifiedBy", fmt.Sprintf("block %d (%s)", cert.Height, cert.BlockID)},
					Field{"pChainHeight", cert.PChainHeight},
					Field{"chainCreatedAt", vs.ChainCreatedAt},
					Field{"stake", fmt.Sprintf("%d of %d signed (%d signers, more than 2/3)", proof.SignedWeight, proof.TotalWeight, proof.Signers)},
					Field{"blocksWalked", proof.Walked},
					Field{"verified", true},
				)
				return g.Emit(proof, fs)
			})
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&height, "height", 0, "verify the certificate covering the block at this height")
	f.StringVar(&pchain, "pchain", "", "node URI whose P-chain gives the validator set (default: the first --rpc)")
	f.StringVar(&setFile, "validators", "", "read the validator set from this JSON file instead of a P-chain")
	f.StringVar(&saveSet, "save-validators", "", "write the validator set used to this JSON file")
	f.Uint32Var(&networkID, "network-id", 0, "network ID, when --validators names none")
	f.Uint64Var(&createdAt, "chain-created-at", 0, "P-chain height the chain was created at (default: read from the P-chain, or the --validators file's)")
	f.BoolVar(&waitForFinal, "wait", false, "wait (up to --timeout) until the transaction is final")
	return cmd
}

// verifyError marks a certificate or proof that does not check out.
type verifyError struct{ err error }

func (v verifyError) Error() string { return v.err.Error() }
func (v verifyError) Unwrap() error { return v.err }

// chainIDOf is --chain as an ID, or, for an alias, the chain ID its nodes
// answer with.
func (g *Globals) chainIDOf(ctx context.Context, r *client.Router) (ids.ID, error) {
	if id, err := ids.FromString(g.Chain); err == nil {
		return id, nil
	}
	node, err := r.GetNode(ctx)
	if err != nil {
		return ids.Empty, err
	}
	return ids.ID(node.ChainID), nil
}

// validatorSet is the set a certificate is checked against, with the
// height the chain was created at: from a file, or from a P-chain.
func (g *Globals) validatorSet(ctx context.Context, r *client.Router, cert *certificate.Certificate, chainID ids.ID, pchain, file string, networkID uint32, createdAt uint64) (certificate.ValidatorSet, error) {
	if file != "" {
		vs, err := certificate.ReadValidatorSet(file)
		if err != nil {
			return vs, UsageError{fmt.Errorf("--validators: %w", err)}
		}
		if vs.NetworkID == 0 {
			vs.NetworkID = networkID
		}
		if createdAt != 0 {
			vs.ChainCreatedAt = createdAt
		}
		switch {
		case vs.NetworkID == 0:
			return vs, UsageError{fmt.Errorf("--validators: %s names no networkID: pass --network-id", file)}
		case vs.ChainCreatedAt == 0:
			return vs, UsageError{fmt.Errorf("--validators: %s names no chainCreatedAt (the P-chain height of the chain's CreateChainTx): pass --chain-created-at, or save the set again from a P-chain", file)}
		}
		return vs, nil
	}
	if pchain == "" {
		pchain = g.RPC[0]
	}
	var hint uint64
	if createdAt == 0 {
		hint, _ = finality.FirstPChainHeight(ctx, r.GetBlock)
	}
	vs, err := subnet.CertificateSet(ctx, subnet.NewNode(pchain), chainID, cert.PChainHeight, createdAt, hint)
	switch {
	case errors.Is(err, subnet.ErrNoChainBelow):
		return vs, verifyError{fmt.Errorf("%w: %w (the P-chain of %s)", certificate.ErrBeforeChain, err, pchain)}
	case errors.Is(err, subnet.ErrCreationTooFar):
		return vs, fmt.Errorf("%w: pass --chain-created-at", err)
	case errors.Is(err, subnet.ErrNoSubnet):
		return vs, err
	case err != nil:
		return vs, fmt.Errorf("%w: the P-chain of %s: %w", client.ErrTransport, pchain, err)
	}
	return vs, nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// isVerifyError reports a certificate or proof that did not check out.
func isVerifyError(err error) bool {
	var v verifyError
	return errors.As(err, &v)
}
