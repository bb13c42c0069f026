package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/state"
)

// storeStartWait bounds the ping of the store at start: past the client's
// own bounds (state.DialTimeout, one retry), so that they decide.
const storeStartWait = 10 * time.Second

// openStore opens the state store that state.store names and checks it
// answers, before any listener serves: a sidecar that cannot reach its
// store exits 1 naming the server's host (never the URL's password). With
// the memory store it returns nil.
func openStore(ctx context.Context, cfg *config.Config, env []string, logger *zap.Logger) (*state.Redis, error) {
	if cfg.State.Store != config.StoreRedis {
		return nil, nil
	}
	store, err := state.Open(cfg.State, func(name string) string { return envValue(env, name) })
	if err != nil {
		return nil, &exitError{code: 1, msg: "sidecar: state.store redis: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, storeStartWait)
	defer cancel()
	if err := store.Ping(ctx); err != nil {
		store.Close()
		return nil, &exitError{code: 1, msg: "sidecar: state.store redis: unreachable at start: " + err.Error()}
	}
	logger.Info("state store", zap.String("store", config.StoreRedis), zap.String("host", store.Host()), zap.String("key_prefix", store.Prefix))
	return store, nil
}
