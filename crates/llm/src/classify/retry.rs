//! How long a provider asked us to wait before retrying, from wherever it
//! said so. The loop does the waiting; this only reads the request.
//!
//! Sources, in the order they are trusted:
//! 1. headers: `retry-after-ms` (OpenAI), then `retry-after` as seconds
//!    (fractions allowed) or as an HTTP date (RFC 9110);
//! 2. a Google `RetryInfo` detail in a JSON error (`"retryDelay": "30s"`);
//! 3. the provider's own words: "try again in 20s", "Please retry in 1.5s",
//!    "try again in 1m30s", "retry after 2 seconds".
//!
//! Waits are capped at [`MAX_WAIT`]: a longer one is not a wait a person
//! wants the loop to sit through silently, so it is reported as-is only up to
//! the cap (the loop has its own ceiling too).

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

/// The longest wait we report.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// The wait a response's headers ask for.
pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| -> Option<&str> { Some(headers.get(name)?.to_str().ok()?.trim()) };
    if let Some(ms) = text("retry-after-ms").and_then(non_negative) {
        return capped(ms / 1000.0);
    }
    let value = text("retry-after")?;
    if let Some(seconds) = non_negative(value) {
        return capped(seconds);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    // A date in the past means "now".
    let wait = date
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_WAIT))
}

fn non_negative(text: &str) -> Option<f64> {
    let value = text.parse::<f64>().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value)
}

/// Seconds as a duration (to the nearest nanosecond, so "0.006" is 6 ms),
/// at most [`MAX_WAIT`].
fn capped(seconds: f64) -> Option<Duration> {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return None;
    }
    if seconds >= MAX_WAIT.as_secs_f64() {
        return Some(MAX_WAIT);
    }
    Some(Duration::from_nanos((seconds * 1e9).round() as u64))
}

/// A Google `RetryInfo` delay in a JSON error: an object with `error.details`,
/// or an array of such objects (Gemini answers HTTP errors with one).
pub(crate) fn from_retry_info(value: &Value) -> Option<Duration> {
    let value = match value {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let details = value.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|detail| {
        let kind = detail.get("@type")?.as_str()?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        match detail.get("retryDelay")? {
            // The JSON form of a protobuf Duration: "30s", "1.500s".
            Value::String(text) => capped(non_negative(text.trim().strip_suffix('s')?)?),
            Value::Object(parts) => {
                let seconds = parts.get("seconds").and_then(number).unwrap_or(0.0);
                let nanos = parts.get("nanos").and_then(number).unwrap_or(0.0);
                capped(seconds + nanos / 1e9)
            }
            _ => None,
        }
    })
}

/// Seconds may be a JSON number or, in protobuf's JSON form, a string.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A wait named in a provider's message: "try again in 20s", "Please retry in
/// 1.5s", "try again in 1m30s", "retry after 2 seconds", "in 6ms".
pub(crate) fn from_message(message: &str) -> Option<Duration> {
    const PHRASES: &[&str] = &[
        "try again in ",
        "try again after ",
        "retry in ",
        "retry after ",
    ];
    let lower = message.to_lowercase();
    PHRASES.iter().find_map(|phrase| {
        lower
            .match_indices(phrase)
            .find_map(|(at, _)| parse_wait(&lower[at + phrase.len()..]))
    })
}

/// Parses "1m30s", "1.5s", "2 seconds", "6ms", "1h 5m" at the start of `text`.
fn parse_wait(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = 0.0_f64;
    let mut parts = 0;
    loop {
        let trimmed = rest.trim_start();
        let number_len = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let Some(number) = non_negative(&trimmed[..number_len]) else {
            break;
        };
        let after_number = trimmed[number_len..].trim_start();
        let unit_len = after_number
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after_number.len());
        let scale = match &after_number[..unit_len] {
            "ms" | "msec" | "millisecond" | "milliseconds" => 0.001,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            _ => break,
        };
        total += number * scale;
        parts += 1;
        rest = &after_number[unit_len..];
    }
    if parts == 0 {
        return None;
    }
    capped(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn headers_in_every_form() {
        let secs = Duration::from_secs;
        assert_eq!(
            from_headers(&headers(&[("retry-after", "7")])),
            Some(secs(7))
        );
        assert_eq!(
            from_headers(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            from_headers(&headers(&[
                ("retry-after", "7"),
                ("retry-after-ms", "1500")
            ])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            from_headers(&headers(&[
                ("retry-after", "7"),
                ("retry-after-ms", "soon")
            ])),
            Some(secs(7))
        );
        assert_eq!(from_headers(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(from_headers(&headers(&[("retry-after", "later")])), None);
        assert_eq!(from_headers(&HeaderMap::new()), None);
        assert_eq!(
            from_headers(&headers(&[("retry-after", "999999999999")])),
            Some(MAX_WAIT)
        );
    }

    #[test]
    fn an_http_date() {
        let in_a_minute = SystemTime::now() + Duration::from_secs(60);
        let date = httpdate::fmt_http_date(in_a_minute);
        let wait = from_headers(&headers(&[("retry-after", &date)])).unwrap();
        // The date has whole seconds and time passes: loosely a minute.
        assert!(
            wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
            "{wait:?}"
        );
        let past = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert_eq!(from_headers(&past), Some(Duration::ZERO));
    }

    #[test]
    fn google_retry_info() {
        let body = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}
        ]}});
        assert_eq!(from_retry_info(&body), Some(Duration::from_secs(30)));
        let array = json!([{"error": {"details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.500s"}
        ]}}]);
        assert_eq!(from_retry_info(&array), Some(Duration::from_millis(1500)));
        let object = json!({"error": {"details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": {"seconds": "2", "nanos": 500000000}}
        ]}});
        assert_eq!(from_retry_info(&object), Some(Duration::from_millis(2500)));
        assert_eq!(from_retry_info(&json!({"error": {"message": "x"}})), None);
        assert_eq!(from_retry_info(&json!([])), None);
    }

    #[test]
    fn waits_named_in_messages() {
        let ms = Duration::from_millis;
        for (message, expected) in [
            (
                "Rate limit reached. Please try again in 20s.",
                Some(ms(20_000)),
            ),
            (
                "You exceeded your quota. Please retry in 1.5s.",
                Some(ms(1500)),
            ),
            ("Please try again in 1m30s", Some(ms(90_000))),
            ("Please try again in 6ms.", Some(ms(6))),
            ("Try again in 2 minutes", Some(ms(120_000))),
            ("retry after 3 seconds", Some(ms(3000))),
            ("Please retry in 38.25s.", Some(ms(38_250))),
            ("try again in 1h 5m", Some(ms(3_900_000))),
            ("try again in 5 messages", None),
            ("try again later", None),
            ("Overloaded", None),
        ] {
            assert_eq!(from_message(message), expected, "{message}");
        }
    }
}
