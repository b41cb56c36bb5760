//! The OpenAPI 3.1 document served at `GET /openapi.json`.
//!
//! Written by hand, not generated: the bodies the API sends are mostly the
//! protocol's types (`Event`, `Message`, `SessionMeta`), which derive no
//! schema trait, and `gyre-protocol` must not grow a frontend's dependency
//! (utoipa's `ToSchema`, or schemars for aide) for one document; a
//! generator would then describe them as bare objects anyway, at the cost
//! of a proc-macro crate and a wrapper around every route. Events are
//! described by their common shape (`event` tag, `run`), so variants added
//! later need no change here.
//!
//! Invariant (tested, crates/cli/tests/it/serve.rs): every path and method
//! here answers on the real server (never the router's 404 or 405), and the
//! document parses as OpenAPI 3.1.

use std::sync::OnceLock;

use serde_json::{Value, json};

/// The document (built once).
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn json_response(description: &str, schema: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}
    })
}

fn id_parameter() -> Value {
    json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"},
           "description": "The session id."})
}

fn build() -> Value {
    let not_found = error_response("There is no such session.");
    let bad_request = error_response(
        "The request is malformed (bad JSON, unknown field, empty prompt, bad cwd or agent).",
    );
    let unauthorized = error_response("A token is required and was missing or wrong.");
    let unavailable = error_response("The server is shutting down.");
    let forbidden = error_response(
        "Without a token: the Host header is not a loopback name with the server's port, or the Origin is another one (web pages may not use the API).",
    );
    let not_json = error_response("The request has a body that is not sent as application/json.");
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "gyre serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "gyre's sessions over HTTP: create, list and read sessions, post prompts (queued behind a busy run), follow a session's updates as Server-Sent Events, answer permission requests, abort runs. Errors are {\"error\": \"one sentence\"}. Request bodies are JSON sent with `Content-Type: application/json` (else 415). Without a token, requests must name the server as `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` in `Host`, and an `Origin`, if any, must be `http://` one of those (else 403): web pages cannot drive the API."
        },
        "security": [{"bearerAuth": []}, {}],
        "paths": {
            "/openapi.json": {"get": {
                "operationId": "openapi",
                "summary": "This document.",
                "responses": {"200": {"description": "The OpenAPI document.",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
                    "401": unauthorized, "403": forbidden}
            }},
            "/sessions": {
                "get": {
                    "operationId": "listSessions",
                    "summary": "Every stored session, newest (last updated) first; `status` for those open in this process.",
                    "parameters": [{"name": "all", "in": "query", "required": false,
                        "schema": {"type": "boolean", "default": false},
                        "description": "Subagents' sessions too."}],
                    "responses": {"200": json_response("The sessions.", "SessionList"), "400": bad_request, "401": unauthorized, "403": forbidden}
                },
                "post": {
                    "operationId": "createSession",
                    "summary": "Creates a session (and submits its first prompt, when given).",
                    "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreateSession"}}}},
                    "responses": {
                        "415": not_json,
                        "201": {"description": "Created; `run` is the submitted prompt's run, or null.",
                            "content": {"application/json": {"schema": {"type": "object", "required": ["session", "run"],
                                "properties": {"session": {"$ref": "#/components/schemas/Session"},
                                    "run": {"oneOf": [{"$ref": "#/components/schemas/Run"}, {"type": "null"}]}}}}}},
                        "400": bad_request, "401": unauthorized, "403": forbidden, "503": unavailable
                    }
                }
            },
            "/sessions/{id}": {"get": {
                "operationId": "getSession",
                "summary": "A session: its facts, status, queued prompts and stored messages.",
                "parameters": [id_parameter()],
                "responses": {"200": json_response("The session.", "SessionDetail"),
                    "401": unauthorized, "403": forbidden, "404": not_found}
            }},
            "/sessions/{id}/prompt": {"post": {
                "operationId": "postPrompt",
                "summary": "Submits a prompt: it runs now, or after the runs ahead of it. Opens a stored session that is not open here.",
                "parameters": [id_parameter()],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Prompt"}}}},
                "responses": {"202": {"description": "Accepted.", "content": {"application/json": {"schema": {"type": "object",
                        "required": ["session_id", "run", "ahead"],
                        "properties": {"session_id": {"type": "string"}, "run": {"type": "integer", "minimum": 1},
                            "ahead": {"type": "integer", "minimum": 0, "description": "Runs before this one (the running one included); 0: it started."}}}}}},
                    "400": bad_request, "401": unauthorized, "403": forbidden, "404": not_found, "415": not_json, "503": unavailable}
            }},
            "/sessions/{id}/events": {"get": {
                "operationId": "sessionEvents",
                "summary": "The session's updates as Server-Sent Events, from after a sequence number on, until the client goes.",
                "description": "Each event has `id: EPOCH-SEQ` (EPOCH: hex, chosen each time this process opens the session; SEQ: 1, 2, … without gaps within an epoch), `event: NAME` (`status`, or the run event's tag: `run_started`, `text_delta`, `tool_call_ready`, `permission_requested`, …, `run_finished`) and `data: JSON` (see UpdateData). `event: lagged` says updates were lost to a reader that fell behind (its id resumes right); `event: reset` (no id) says the stream cannot resume where asked: the `Last-Event-ID` is of another epoch (the session was closed and opened again since, or another host or process opened it) or a bare number, or the sequence number is beyond the newest; every update still kept follows. Comments (`: keep-alive`) keep the connection. Opens a stored session that is not open here.",
                "parameters": [id_parameter(),
                    {"name": "after", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 0, "default": 0},
                        "description": "Start after this sequence number (a bare SEQ, of the current epoch; 0: every update still kept)."},
                    {"name": "Last-Event-ID", "in": "header", "required": false, "schema": {"type": "string"},
                        "description": "An event id (`EPOCH-SEQ`) received before: start after it when its epoch is the current one, else `reset`. Wins over `after`; what an EventSource sends when it reconnects. Anything but `EPOCH-SEQ` or a bare number is 400."}],
                "responses": {"200": {"description": "The event stream.", "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/UpdateData"}}}},
                    "400": bad_request, "401": unauthorized, "403": forbidden, "404": not_found, "503": unavailable}
            }},
            "/sessions/{id}/permissions/{request_id}": {"post": {
                "operationId": "answerPermission",
                "summary": "Answers a waiting permission request (the `request_id` of a `permission_requested` event).",
                "parameters": [id_parameter(), {"name": "request_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PermissionAnswer"}}}},
                "responses": {"200": {"description": "Answered.", "content": {"application/json": {"schema": {"type": "object",
                        "properties": {"answered": {"type": "string"}}}}}},
                    "400": bad_request, "401": unauthorized, "403": forbidden, "415": not_json,
                    "404": error_response("No such request is waiting in this session here.")}
            }},
            "/sessions/{id}/abort": {"post": {
                "operationId": "abort",
                "summary": "Cancels the running run (it records what it did) and drops the queued prompts.",
                "parameters": [id_parameter()],
                "responses": {"200": {"description": "Done; `aborted`: a run was going on here.", "content": {"application/json": {"schema": {"type": "object",
                        "required": ["aborted", "dropped"],
                        "properties": {"aborted": {"type": "boolean"}, "dropped": {"type": "array", "items": {"type": "string"}, "description": "The queued prompts dropped."}}}}}},
                    "401": unauthorized, "403": forbidden, "404": not_found, "415": not_json}
            }}
        },
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                "description": "Required when the server has a token (always when it listens beyond loopback)."}},
            "schemas": schemas()
        }
    })
}

fn schemas() -> Value {
    json!({
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
        "Status": {"type": "string", "enum": ["idle", "busy", "waiting_for_permission"]},
        "Session": {"type": "object", "required": ["id", "cwd", "provider", "model", "title", "created_at_ms", "updated_at_ms"],
            "properties": {
                "id": {"type": "string"}, "cwd": {"type": "string"}, "provider": {"type": "string"},
                "model": {"type": "string"}, "title": {"type": "string"},
                "created_at_ms": {"type": "integer"}, "updated_at_ms": {"type": "integer"},
                "parent_id": {"type": "string", "description": "Set for a subagent's session."},
                "status": {"$ref": "#/components/schemas/Status", "description": "Present when the session is open in this process."}}},
        "SessionList": {"type": "object", "required": ["sessions"],
            "properties": {"sessions": {"type": "array", "items": {"$ref": "#/components/schemas/Session"}}}},
        "SessionDetail": {"type": "object", "required": ["session", "last_seq", "queued", "messages"],
            "properties": {
                "session": {"$ref": "#/components/schemas/Session"},
                "last_seq": {"type": ["integer", "null"], "description": "The newest update's sequence number (in the current epoch); null when not open here."},
                "queued": {"type": "array", "items": {"type": "string"}, "description": "Prompts waiting behind the running run."},
                "messages": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}}}},
        "Message": {"type": "object", "required": ["id", "role", "parts"],
            "properties": {"id": {"type": "string"}, "role": {"type": "string", "enum": ["user", "assistant"]},
                "parts": {"type": "array", "items": {"type": "object", "required": ["type"],
                    "properties": {"type": {"type": "string", "description": "text, reasoning, tool_call, tool_result or image."}}}}}},
        "Run": {"type": "object", "required": ["run", "ahead"],
            "properties": {"run": {"type": "integer", "minimum": 1}, "ahead": {"type": "integer", "minimum": 0}}},
        "CreateSession": {"type": "object", "additionalProperties": false, "properties": {
            "cwd": {"type": "string", "description": "Absolute workspace directory (default: the server's)."},
            "agent": {"type": "string", "description": "The agent (default: the configured one)."},
            "title": {"type": "string", "description": "Default: the prompt's first line."},
            "prompt": {"type": "string", "minLength": 1, "description": "Submitted at once."}}},
        "Prompt": {"type": "object", "required": ["prompt"], "additionalProperties": false,
            "properties": {"prompt": {"type": "string", "minLength": 1}}},
        "PermissionAnswer": {"type": "object", "required": ["answer"], "additionalProperties": false,
            "properties": {"answer": {"type": "string", "enum": ["allow", "always", "deny"],
                "description": "always: allow, and add the request's `always_rule` for the rest of the session."}}},
        "UpdateData": {"description": "The `data:` of one event.", "oneOf": [
            {"title": "status", "type": "object", "required": ["status"],
                "properties": {"status": {"$ref": "#/components/schemas/Status"}}},
            {"title": "run event", "type": "object", "required": ["run", "event"],
                "description": "A run's event: its tag and fields as gyre_protocol::Event serialises them.",
                "properties": {"run": {"type": "integer", "minimum": 1}, "event": {"type": "string"}},
                "additionalProperties": true},
            {"title": "lagged", "type": "object", "required": ["after", "resumes_at", "missed"],
                "properties": {"after": {"type": "integer"}, "resumes_at": {"type": "integer"},
                    "missed": {"type": "integer"}, "message": {"type": "string"}}},
            {"title": "reset", "type": "object", "required": ["reason", "last_seq"],
                "properties": {"reason": {"type": "string", "enum": ["other_epoch", "beyond_newest"]},
                    "last_seq": {"type": "integer"}, "message": {"type": "string"}}}
        ]}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_resolves() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let text = doc.to_string();
        for reference in text.split("\"$ref\":\"").skip(1) {
            let target = reference.split('"').next().unwrap();
            let name = target.strip_prefix("#/components/schemas/").unwrap();
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{target} resolves"
            );
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                assert!(
                    operation["responses"]
                        .as_object()
                        .is_some_and(|r| !r.is_empty()),
                    "{method} {path} has responses"
                );
                for (status, response) in operation["responses"].as_object().unwrap() {
                    assert!(
                        response["description"].is_string(),
                        "{method} {path} {status} has a description"
                    );
                }
            }
        }
    }
}
