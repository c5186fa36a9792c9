//! A small JSON Schema checker: the subset of draft 2020-12 the project's schemas use
//! (`type`, `const`, `enum`, `properties`, `required`, `additionalProperties: false`,
//! `items`, `oneOf`, `anyOf`, `$ref` to `#/$defs/...`, `minimum`, `maximum`, `pattern`).
//! An unknown keyword is an error, so a schema can't silently use more than is checked.
//! Patterns: `^`/`$` anchors, literals, `\` escapes, `[...]` classes with ranges, groups
//! `(...)`, and the quantifiers `*`, `+`, `?`, `{n}`, `{n,m}` (no alternation).

use serde_json::Value;

/// Checks `value` against `schema` (the root, for `$ref`); returns every violation, each
/// with its JSON pointer.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, value, "", &mut errors);
    errors
}

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "title",
    "description",
    "$defs",
    "$comment",
];

fn check(root: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            errors.push(format!("{at}: schema false"));
        }
        return;
    };
    for (key, s) in obj {
        match key.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => {
                let r = s.as_str().unwrap_or_default();
                match r
                    .strip_prefix("#/$defs/")
                    .and_then(|name| root.get("$defs").and_then(|d| d.get(name)))
                {
                    Some(target) => check(root, target, v, at, errors),
                    None => errors.push(format!("{at}: unresolvable $ref {r}")),
                }
            }
            "type" => {
                let types: Vec<&str> = match s {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !types.iter().any(|t| has_type(v, t)) {
                    errors.push(format!("{at}: {v} is not of type {types:?}"));
                }
            }
            "const" => {
                if v != s {
                    errors.push(format!("{at}: {v} != const {s}"));
                }
            }
            "enum" => {
                if !s.as_array().is_some_and(|a| a.contains(v)) {
                    errors.push(format!("{at}: {v} not in enum {s}"));
                }
            }
            "minimum" => {
                if let (Some(x), Some(min)) = (v.as_f64(), s.as_f64()) {
                    if x < min {
                        errors.push(format!("{at}: {x} < minimum {min}"));
                    }
                }
            }
            "maximum" => {
                if let (Some(x), Some(max)) = (v.as_f64(), s.as_f64()) {
                    if x > max {
                        errors.push(format!("{at}: {x} > maximum {max}"));
                    }
                }
            }
            "pattern" => {
                if let Some(text) = v.as_str() {
                    let p = s.as_str().unwrap_or_default();
                    if !pattern_matches(p, text) {
                        errors.push(format!("{at}: {text:?} does not match {p}"));
                    }
                }
            }
            "required" => {
                if let Some(o) = v.as_object() {
                    for name in s.as_array().into_iter().flatten().filter_map(Value::as_str) {
                        if !o.contains_key(name) {
                            errors.push(format!("{at}: missing required {name:?}"));
                        }
                    }
                }
            }
            "properties" => {
                if let (Some(o), Some(props)) = (v.as_object(), s.as_object()) {
                    for (name, sub) in props {
                        if let Some(x) = o.get(name) {
                            check(root, sub, x, &format!("{at}/{name}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(o) = v.as_object() {
                    let known = obj.get("properties").and_then(Value::as_object);
                    for (name, x) in o {
                        if known.is_some_and(|k| k.contains_key(name)) {
                            continue;
                        }
                        match s {
                            Value::Bool(false) => {
                                errors.push(format!("{at}: unexpected property {name:?}"))
                            }
                            Value::Bool(true) => {}
                            sub => check(root, sub, x, &format!("{at}/{name}"), errors),
                        }
                    }
                }
            }
            "items" => {
                if let Some(a) = v.as_array() {
                    for (i, x) in a.iter().enumerate() {
                        check(root, s, x, &format!("{at}/{i}"), errors);
                    }
                }
            }
            "oneOf" | "anyOf" => {
                let subs = s.as_array().cloned().unwrap_or_default();
                let passing = subs
                    .iter()
                    .filter(|sub| {
                        let mut e = Vec::new();
                        check(root, sub, v, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                let ok = if key == "oneOf" {
                    passing == 1
                } else {
                    passing >= 1
                };
                if !ok {
                    errors.push(format!(
                        "{at}: {v} matches {passing} of the {key} alternatives"
                    ));
                }
            }
            other => errors.push(format!("{at}: schema keyword {other:?} is not supported")),
        }
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64(),
        _ => false,
    }
}

/// One pattern element with its repetition bounds.
#[derive(Debug, Clone)]
enum Atom {
    Char(char),
    Class(Vec<(char, char)>, bool),
    Group(Vec<Piece>),
}

#[derive(Debug, Clone)]
struct Piece {
    atom: Atom,
    min: usize,
    max: usize,
}

/// Whether `text` matches `pattern` (anchored when it starts with `^` / ends with `$`).
pub fn pattern_matches(pattern: &str, text: &str) -> bool {
    let mut p: Vec<char> = pattern.chars().collect();
    let start_anchor = p.first() == Some(&'^');
    if start_anchor {
        p.remove(0);
    }
    let end_anchor = p.last() == Some(&'$') && !(p.len() >= 2 && p[p.len() - 2] == '\\');
    if end_anchor {
        p.pop();
    }
    let mut pos = 0;
    let pieces = parse_seq(&p, &mut pos);
    assert_eq!(
        pos,
        p.len(),
        "pattern {pattern:?}: unsupported syntax at {pos}"
    );
    let t: Vec<char> = text.chars().collect();
    let starts: Vec<usize> = if start_anchor {
        vec![0]
    } else {
        (0..=t.len()).collect()
    };
    starts.into_iter().any(|s| {
        let mut ends = Vec::new();
        match_seq(&pieces, &t, s, &mut ends);
        ends.iter().any(|&e| !end_anchor || e == t.len())
    })
}

fn parse_seq(p: &[char], pos: &mut usize) -> Vec<Piece> {
    let mut out = Vec::new();
    while *pos < p.len() && p[*pos] != ')' {
        let atom = match p[*pos] {
            '(' => {
                *pos += 1;
                let inner = parse_seq(p, pos);
                assert_eq!(p.get(*pos), Some(&')'), "unclosed group");
                *pos += 1;
                Atom::Group(inner)
            }
            '[' => {
                *pos += 1;
                let negated = p.get(*pos) == Some(&'^');
                if negated {
                    *pos += 1;
                }
                let mut ranges = Vec::new();
                while p[*pos] != ']' {
                    let mut a = p[*pos];
                    if a == '\\' {
                        *pos += 1;
                        a = p[*pos];
                    }
                    *pos += 1;
                    if p[*pos] == '-' && p[*pos + 1] != ']' {
                        let b = p[*pos + 1];
                        *pos += 2;
                        ranges.push((a, b));
                    } else {
                        ranges.push((a, a));
                    }
                }
                *pos += 1;
                Atom::Class(ranges, negated)
            }
            '\\' => {
                *pos += 1;
                let c = p[*pos];
                *pos += 1;
                Atom::Char(c)
            }
            c => {
                assert!(!"|.".contains(c), "pattern syntax {c:?} is not supported");
                *pos += 1;
                Atom::Char(c)
            }
        };
        let (mut min, mut max) = (1, 1);
        match p.get(*pos) {
            Some('*') => (min, max, *pos) = (0, usize::MAX, *pos + 1),
            Some('+') => (min, max, *pos) = (1, usize::MAX, *pos + 1),
            Some('?') => (min, max, *pos) = (0, 1, *pos + 1),
            Some('{') => {
                let close = p[*pos..].iter().position(|&c| c == '}').unwrap() + *pos;
                let body: String = p[*pos + 1..close].iter().collect();
                let (a, b) = match body.split_once(',') {
                    Some((a, b)) => (
                        a.parse().unwrap(),
                        if b.is_empty() {
                            usize::MAX
                        } else {
                            b.parse().unwrap()
                        },
                    ),
                    None => {
                        let n = body.parse().unwrap();
                        (n, n)
                    }
                };
                (min, max, *pos) = (a, b, close + 1);
            }
            _ => {}
        }
        out.push(Piece { atom, min, max });
    }
    out
}

/// Collects every position where `pieces` can end when matched from `at`.
fn match_seq(pieces: &[Piece], t: &[char], at: usize, ends: &mut Vec<usize>) {
    let Some((first, rest)) = pieces.split_first() else {
        ends.push(at);
        return;
    };
    // Positions after k repetitions of `first`, for k = 0, 1, ...
    let mut frontier = vec![at];
    let mut k = 0;
    loop {
        if k >= first.min {
            for &p in &frontier {
                match_seq(rest, t, p, ends);
            }
        }
        if k == first.max || frontier.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for &p in &frontier {
            match_atom(&first.atom, t, p, &mut next);
        }
        next.sort_unstable();
        next.dedup();
        // No progress: stop (an empty-matching group repeated).
        if next == frontier {
            break;
        }
        frontier = next;
        k += 1;
    }
}

fn match_atom(atom: &Atom, t: &[char], at: usize, ends: &mut Vec<usize>) {
    match atom {
        Atom::Char(c) => {
            if t.get(at) == Some(c) {
                ends.push(at + 1);
            }
        }
        Atom::Class(ranges, negated) => {
            if let Some(&c) = t.get(at) {
                if ranges.iter().any(|&(a, b)| a <= c && c <= b) != *negated {
                    ends.push(at + 1);
                }
            }
        }
        Atom::Group(inner) => match_seq(inner, t, at, ends),
    }
}
