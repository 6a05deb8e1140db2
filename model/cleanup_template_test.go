package model

import (
	"strings"
	"testing"
)

func TestCleanupTemplateProblem(t *testing.T) {
	captured := map[string]bool{"id": true, "base": true, "ns": true}
	for _, ok := range []string{
		"{base}/workspaces/{id}", "/run/vm0/sock/{id}", "/var/lib/agentbox/{id}", "/var/lib/x/{id}/sock", "/srv/{ns}/{id}", "/srv/{id}/{ns}",
	} {
		if err := cleanupTemplateProblem(ok, captured); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, tc := range []struct{ t, says string }{
		{"/", `other than "/"`},
		{"/tmp/{id}/..", "clean path"},
		{"/tmp/./{id}", "clean path"},
		{"/tmp//{id}", "clean path"},
		{"/tmp/{id}/", "clean path"},
		{"/var/{id}x", "whole path component"},
		{"/var/x{id}", "whole path component"},
		{"/x/{base}{id}", "whole path component"},
		{"/{id}", "literal directory above it"},
		{"/{ns}/{id}", "literal directory above it"},
		{"{base}/{id}", "literal directory above it"},
		{"{id}/x", "absolute path"},
		{"tmp/{id}", "absolute path"},
		{"/tmp/{id}/{id}", "exactly once"},
		{"/tmp/x", "exactly once"},
		{"/tmp/{nope}/{id}", "no matcher captures"},
		{"/tmp/{id", `"{" without "}"`},
	} {
		err := cleanupTemplateProblem(tc.t, captured)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want it refused saying %q", tc.t, err, tc.says)
		}
	}
}

// Every preset's cleanup templates pass the check the rules file gets.
func TestPresetCleanupTemplates(t *testing.T) {
	for _, r := range Presets() {
		if err := r.Validate(); err != nil {
			t.Errorf("preset %s: %v", r.Name, err)
		}
	}
}
