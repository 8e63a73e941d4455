//go:build !race

package scan

const raceBuild = false
