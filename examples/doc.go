// Package examples holds the example agents (python/, node/), the map of
// the ADK preset (adk/) and the quickstarts' smallest agents (quickstart/,
// run by docs' tests as docs/quickstart-*.md show them); its tests run the
// agents as a user would.
package examples
