package main

import (
	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
)

// warnPlatformVars warns, once, when doors are mounted on the platform's
// listener and Agent Platform's variables (env's) are set but cannot
// make their public URL (core.PlatformBase): the doors then advertise
// the address they are asked on. The warning names the variables, not
// their values: those are the platform's, and not for the log.
func warnPlatformVars(cfg *config.Config, env []string, logger *zap.Logger) {
	if len(cfg.Mounted()) == 0 {
		return
	}
	if _, err := core.PlatformBase(func(name string) string { return envValue(env, name) }); err != nil {
		logger.Warn("platform variables ignored", zap.Error(err))
	}
}
