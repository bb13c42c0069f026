// Package examples holds the example agents (python/, node/) and the map
// of the ADK preset (adk/); its tests run the agents as a user would.
package examples
