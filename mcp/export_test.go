package mcp

// StdioServerArgForTest makes the test binary the test stdio server, for the
// external tests that build a whole gateway around it.
const StdioServerArgForTest = stdioServerArg

// RawServerArgForTest makes the test binary the hand-written stdio server.
const RawServerArgForTest = rawServerArg
