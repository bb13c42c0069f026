// Package fieldname turns the lowerCamelCase field names of JSON (the
// Agent Platform REST API's, the ADK api servers') into the snake_case
// names the same fields carry in proto and in AdkApp ("invocationId" →
// "invocation_id"). deploy builds update masks with it, adk renames the
// keys of sessions and events.
package fieldname
