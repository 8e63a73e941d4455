//go:build !unix

package demo

import "errors"

// startDetached: there are no sessions to leave here.
func startDetached() ([]string, error) {
	return nil, errors.New("detached processes need a Unix system")
}
