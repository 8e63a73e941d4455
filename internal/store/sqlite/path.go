package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultPath is where the store lives when the config names none.
//
// The store is data, not configuration, so it follows the XDG base
// directories where they apply: $XDG_DATA_HOME/toolgate/toolgate.db when set
// (on any system), else ~/.local/share/toolgate/toolgate.db on Linux and the
// other Unix-likes. macOS and Windows have no data-directory convention in
// the standard library; there it is os.UserConfigDir()/toolgate/toolgate.db
// (~/Library/Application Support, %AppData%). Open creates the directory.
func DefaultPath() (string, error) {
	// The XDG spec says relative values are invalid and must be ignored.
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolgate", "toolgate.db"), nil
	}
	switch runtime.GOOS {
	case "darwin", "ios", "windows", "plan9":
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "toolgate", "toolgate.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	if home == "" {
		return "", errors.New("no home directory for the default store path")
	}
	return filepath.Join(home, ".local", "share", "toolgate", "toolgate.db"), nil
}
