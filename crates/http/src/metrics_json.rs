//! `/metrics` as JSON (issue 16: Queen serves JSON there and its client's
//! `admin.metrics()` reads it): the same samples as the Prometheus text, parsed from
//! it, so the two can never disagree. Must never drop a sample: one that does not
//! parse is kept under `unparsed`.

use serde_json::{Map, Value};

/// `{"success": true, "metrics": {name: value}, "series": [{name, labels, value}],
/// "unparsed": [line]}`: samples without labels by name, labelled ones as a list.
pub fn from_text(text: &str) -> Value {
    let (mut plain, mut series, mut unparsed) = (Map::new(), Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        match sample(line) {
            Some((name, labels, v)) if labels.is_empty() => {
                plain.insert(name, v);
            }
            Some((name, labels, v)) => series.push(serde_json::json!({"name": name, "labels": labels, "value": v})),
            None => unparsed.push(Value::String(line.to_string())),
        }
    }
    serde_json::json!({"success": true, "metrics": plain, "series": series, "unparsed": unparsed})
}

/// `name{k="v",...} value` → (name, labels, value); a value that is no finite number
/// (`+Inf`, `NaN`) is kept as its text.
fn sample(line: &str) -> Option<(String, Map<String, Value>, Value)> {
    let (head, value) = line.rsplit_once(' ')?;
    let value = match value.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
        Some(n) => Value::Number(n),
        None => Value::String(value.to_string()),
    };
    let Some((name, rest)) = head.split_once('{') else { return Some((head.to_string(), Map::new(), value)) };
    let body = rest.strip_suffix('}')?;
    let mut labels = Map::new();
    let mut chars = body.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        if chars.next() != Some('"') {
            return None;
        }
        let mut val = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => val.push('\n'),
                    c => val.push(c),
                },
                '"' => break,
                c => val.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').to_string(), Value::String(val));
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
    Some((name.to_string(), labels, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_become_json_and_nothing_is_dropped() {
        let text = "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n\
                    b_bucket{le=\"+Inf\",route=\"/api/v1/pop/queue/{queue}\"} 7\n\
                    c{k=\"say \\\"hi\\\"\\nthere\"} 0.5\nd NaN\nbroken{k=\"v} 1\n";
        let v = from_text(text);
        assert_eq!(v["metrics"]["a_total"], 3.0);
        assert_eq!(v["metrics"]["d"], "NaN");
        assert_eq!(v["series"][0]["labels"]["le"], "+Inf");
        assert_eq!(v["series"][0]["labels"]["route"], "/api/v1/pop/queue/{queue}");
        assert_eq!(v["series"][0]["value"], 7.0);
        assert_eq!(v["series"][1]["labels"]["k"], "say \"hi\"\nthere");
        assert_eq!(v["unparsed"][0], "broken{k=\"v} 1");
    }
}
