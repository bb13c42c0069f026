// Command linkszap links go.uber.org/zap and nothing else of the module's
// requirements: TestFromBinaries reads its build information.
package main

import "go.uber.org/zap"

func main() { zap.NewNop().Info("linked") }
