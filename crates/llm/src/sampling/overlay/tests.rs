use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::*;

#[derive(Serialize)]
struct Inner {
    a: u32,
    b: u32,
}

#[derive(Serialize)]
struct Config {
    max: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    inner: Inner,
}

#[derive(Serialize)]
struct Body {
    model: &'static str,
    config: Config,
    list: Vec<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    absent: Option<u32>,
    stream: bool,
}

fn body() -> Body {
    Body {
        model: "m",
        config: Config {
            max: 10,
            temperature: Some(0.7),
            inner: Inner { a: 1, b: 2 },
        },
        list: vec![1, 2],
        absent: None,
        stream: true,
    }
}

fn options(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn overlaid(body: &impl Serialize, options: &Map<String, Value>) -> String {
    String::from_utf8(to_vec(body, options).unwrap()).unwrap()
}

/// What the one-pass overlay must equal: the body as a value, merged.
fn reference(body: &impl Serialize, options: &Map<String, Value>) -> Value {
    let mut value = serde_json::to_value(body).unwrap();
    merge(&mut value, &Value::Object(options.clone()));
    value
}

#[test]
fn nested_objects_merge_and_everything_else_replaces() {
    let options = options(json!({
        // Merges: a nested object key by key, a new key added inside.
        "config": {"inner": {"b": 20, "c": 3}, "temperature": 0.2},
        // Replace: an array, a scalar, an object over a scalar.
        "list": [9],
        "stream": false,
        "model": {"name": "m2"},
        // A field the body skipped is simply added.
        "absent": null,
    }));
    let text = overlaid(&body(), &options);
    let expected = json!({
        "model": {"name": "m2"},
        "config": {"max": 10, "temperature": 0.2, "inner": {"a": 1, "b": 20, "c": 3}},
        "list": [9],
        "stream": false,
        "absent": null,
    });
    let sent: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(sent, expected);
    assert_eq!(sent, reference(&body(), &options));
}

#[test]
fn untouched_fields_keep_their_bytes_and_order_and_new_keys_come_last() {
    let options = options(json!({"reasoning_effort": "high", "stream": false}));
    assert_eq!(
        overlaid(&body(), &options),
        r#"{"model":"m","config":{"max":10,"temperature":0.7,"inner":{"a":1,"b":2}},"list":[1,2],"stream":false,"reasoning_effort":"high"}"#
    );
}

#[test]
fn a_merged_field_keeps_decimal_numbers_exact() {
    // The field is rebuilt as a Value to merge into: 0.7 must stay 0.7.
    let options = options(json!({"config": {"extra": true}}));
    let text = overlaid(&body(), &options);
    assert!(text.contains(r#""temperature":0.7"#), "{text}");
}

#[test]
fn a_map_body_takes_options_too() {
    let mut map = BTreeMap::new();
    map.insert("a", json!({"x": 1}));
    map.insert("b", json!(2));
    let options = options(json!({"a": {"y": 2}, "c": 3}));
    assert_eq!(
        overlaid(&map, &options),
        r#"{"a":{"x":1,"y":2},"b":2,"c":3}"#
    );
}

#[test]
fn a_body_that_is_not_an_object_is_an_error() {
    let options = options(json!({"a": 1}));
    assert!(to_vec(&[1, 2], &options).is_err());
    assert!(to_vec(&"text", &options).is_err());
    assert!(to_vec(&Some(body()), &options).is_ok());
}

#[test]
fn merge_follows_the_rules() {
    let mut target = json!({"a": {"b": {"c": 1, "d": 2}, "e": [1]}, "f": 1});
    merge(
        &mut target,
        &json!({"a": {"b": {"d": {"deep": true}}, "e": [2, 3]}, "f": {"g": 1}, "h": null}),
    );
    assert_eq!(
        target,
        json!({"a": {"b": {"c": 1, "d": {"deep": true}}, "e": [2, 3]}, "f": {"g": 1}, "h": null})
    );
    // A non-object patch replaces even an object.
    let mut target = json!({"a": 1});
    merge(&mut target, &json!(5));
    assert_eq!(target, json!(5));
}
