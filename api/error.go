package api

import (
	"encoding/json"
	"fmt"

	"github.com/s-chain/schain/errcode"
)

// Error is a JSON-RPC 2.0 error object: what a node answers instead of a
// result, and what an allocateBatch result carries. Code is one of the
// Code* constants (or a JSON-RPC protocol code); Data's shape depends on
// the code (NotOwnerData, RetryData, ...), so it stays raw until asked
// for (DataOf).
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError is the error object of code with data (nil: none).
func NewError(code int, msg string, data any) *Error {
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if raw, err := json.Marshal(data); err == nil && string(raw) != "null" {
			e.Data = raw
		}
	}
	return e
}

// Error names the code so that a log line alone says what happened.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d): %s", errcode.Code(e.Code).Name(), e.Code, e.Message)
}

// Is makes errors.Is match the class of the code (errcode.Code.Class), so
// that an answer and a local error of one class compare equal.
func (e *Error) Is(target error) bool {
	return target == errcode.Code(e.Code).Class()
}

// Name is the code's stable lowercase identifier ("not_owner").
func (e *Error) Name() string { return errcode.Code(e.Code).Name() }

// DataOf reports whether e carries code, decoding its data into v on a
// best-effort basis: a missing or odd payload must not hide the code
// itself.
func (e *Error) DataOf(code int, v any) bool {
	if e == nil || e.Code != code {
		return false
	}
	if len(e.Data) > 0 && v != nil {
		_ = json.Unmarshal(e.Data, v)
	}
	return true
}
