// Package adkapp is the table of AdkApp's class methods (the Agent
// Platform's ADK template): for each, its name, api_mode, the adk.*
// handler that serves it, the inputs that handler requires, and the
// description and parameters schema the platform's SDK shows. It is the
// one place the methods are named: config builds the adk preset from it,
// package adk registers a handler function for each of its handlers, and
// deploy describes the methods from it. It imports nothing of the
// sidecar's, so each of them can read it.
package adkapp
