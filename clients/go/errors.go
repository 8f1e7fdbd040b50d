package snowdrift

import (
	"errors"
	"strings"
)

// The kinds of error a call can return. Test for them with errors.Is; every error the
// client returns is an *Error whose Kind is one of these.
var (
	// ErrInvalidConfig: the Config given to New is wrong (no endpoint, a URL that does not
	// parse, a share outside 0 to 1). Fix the code or the config.
	ErrInvalidConfig = errors.New("invalid snowdrift client config")
	// ErrBadRequest: the call's own arguments are wrong (n below 1, an empty name), or the
	// server refused the request as malformed (400). Final: not retried.
	ErrBadRequest = errors.New("bad request")
	// ErrUnknownName: no generator or tag of that name on the servers (404). Final.
	ErrUnknownName = errors.New("unknown name")
	// ErrUnauthorized: the token is missing or unknown (401). Final.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the token may not use that name (403). Final. errors.Is(err,
	// ErrUnauthorized) is true for it as well, since both mean "the token was refused".
	ErrForbidden = errors.New("forbidden")
	// ErrWrongKind: the name issues text IDs and a number was asked for (or the other way
	// round), or the server cannot answer the name in the form asked (409). Final.
	ErrWrongKind = errors.New("wrong kind of ID")
	// ErrUnavailable: no endpoint gave IDs within the deadline and the cache had none. The
	// message names the name, every endpoint and its last error. Not final: the client
	// recovers by itself once a server answers.
	ErrUnavailable = errors.New("unavailable")
	// ErrRefused: the endpoints answered, but with IDs this client refused (IDs it had
	// already received for the name, a broken answer). Not final.
	ErrRefused = errors.New("refused")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client closed")
)

// Error is every error the client returns: a Kind to branch on (one of the Err values,
// through errors.Is) and a message that says what happened and what to do.
type Error struct {
	// Kind is one of ErrInvalidConfig, ErrBadRequest, ErrUnknownName, ErrUnauthorized,
	// ErrForbidden, ErrWrongKind, ErrUnavailable, ErrRefused, ErrClosed.
	Kind error
	// Name is the generator or tag the call was for ("" for config errors).
	Name string
	// Message is the whole text, as Error returns it.
	Message string
	// Cause is what ended the call when that was the caller's context, else nil.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is this error's kind (ErrForbidden also matches
// ErrUnauthorized).
func (e *Error) Is(target error) bool {
	if target == e.Kind {
		return true
	}
	return e.Kind == ErrForbidden && target == ErrUnauthorized
}

// Unwrap gives the caller's context error when that ended the call.
func (e *Error) Unwrap() error { return e.Cause }

// Final reports whether asking again cannot help until something changes (a name, a token,
// the code); outages and refused answers are not final.
func (e *Error) Final() bool {
	return e.Kind != ErrUnavailable && e.Kind != ErrRefused
}

func newError(kind error, name string, msg ...string) *Error {
	return &Error{Kind: kind, Name: name, Message: strings.Join(msg, "")}
}

// final reports whether err is an *Error that must not be retried.
func final(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Final()
}
