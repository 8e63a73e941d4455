package config

import "testing"

// OP-2: which literals import-config replaces with placeholders.
func TestLooksSecret(t *testing.T) {
	secret := [][2]string{
		{"GITHUB_PERSONAL_ACCESS_TOKEN", "x"},
		{"API_KEY", "x"},
		{"apiKey", "x"},
		{"X-API-Key", "x"},
		{"Authorization", "x"},
		{"CLIENT_SECRET", "x"},
		{"PGPASSWORD", "x"},
		{"DB_PASS", "x"},
		{"X-Auth-Token", "x"},
		{"Cookie", "x"},
		{"PRIVATE_KEY", "x"},
		{"SLACK_TEAM", "xoxb-1234-abcd"},
		{"GH", "ghp_abcdef"},
		{"H", "Bearer abc"},
		{"DATABASE_URL", "postgres://app:pw@localhost/app"},
		{"ENDPOINT", "https://h.example.com/x?api_key=1"},
		{"ID", "a8f5f167f44f4964e6c998dee827110c"},
		{"JWT", "eyJhbGciOiJSUzI1NiJ9.e30.sig"},
	}
	for _, kv := range secret {
		if !looksSecret(kv[0], kv[1]) {
			t.Errorf("looksSecret(%q, %q) = false, want true", kv[0], kv[1])
		}
	}
	plain := [][2]string{
		{"X-Tenant", "acme"},
		{"DEBUG", "true"},
		{"LOG_LEVEL", "debug"},
		{"CONFIG_PATH", "/Users/me/Library/Application Support/my-server/config.json"},
		{"WORKDIR", `C:\Users\me\mcp`},
		{"NODE_ENV", "production"},
		{"BASE_URL", "https://api.example.com/mcp"},
		{"TENANT_ID", "123e4567-e89b-12d3-a456-426614174000"},
		{"SERVICE", "my-service-name-2"},
		{"LANG", "en_US.UTF-8"},
		{"PORT", "8080"},
		{"TOKENIZERS_PARALLELISM", "false"},
		{"KEYBOARD_LAYOUT", "us"},
		{"MONKEY", "banana"},
	}
	for _, kv := range plain {
		if looksSecret(kv[0], kv[1]) {
			t.Errorf("looksSecret(%q, %q) = true, want false", kv[0], kv[1])
		}
	}
}
