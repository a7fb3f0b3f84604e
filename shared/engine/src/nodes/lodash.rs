//! The JavaScript and lodash semantics n8n's data nodes are written in
//! (`_.get`/`_.set`/`_.unset` paths, `_.isEqual`, `_.lt`, `_.pick`, JS `<`,
//! `String()`, object key order, V8's `Array.prototype.sort`), so the Rust
//! nodes order, compare and name things exactly as n8n does. `None` stands for
//! JavaScript's `undefined` throughout.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::conditions::{js_to_number, num_to_string, num_value, str_to_number};

/// lodash `stringToPath`: `a.b[0]["c.d"]` → `["a", "b", "0", "c.d"]`.
pub fn to_path(path: &str) -> Vec<String> {
    let chars: Vec<char> = path.chars().collect();
    let mut out = vec![];
    if chars.first() == Some(&'.') {
        out.push(String::new());
    }
    let mut i = 0;
    // lodash's regex also yields an empty segment where `.` or `[]` is
    // followed by another `.`/`[]` or the end (`a..b`, `a.`).
    let empty_here = |i: usize| -> bool {
        let sep_len = |j: usize| -> Option<usize> {
            match chars.get(j) {
                Some('.') => Some(1),
                Some('[') if chars.get(j + 1) == Some(&']') => Some(2),
                _ => None,
            }
        };
        match sep_len(i) {
            Some(n) => i + n >= chars.len() || sep_len(i + n).is_some(),
            None => false,
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '.' && c != '[' && c != ']' {
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
            continue;
        }
        if c == '[' {
            // `[123]` / `[-1.5]` or a quoted key.
            let rest: String = chars[i + 1..].iter().collect();
            if let Some(len) = bracket_number(&rest) {
                out.push(rest[..len].to_string());
                i += 1 + rest[..len].chars().count() + 1;
                continue;
            }
            if let Some(q @ ('"' | '\'')) = chars.get(i + 1).copied() {
                let mut j = i + 2;
                let mut key = String::new();
                let mut closed = false;
                while j < chars.len() {
                    if chars[j] == '\\' && j + 1 < chars.len() {
                        key.push(chars[j + 1]);
                        j += 2;
                        continue;
                    }
                    if chars[j] == q && chars.get(j + 1) == Some(&']') {
                        closed = true;
                        break;
                    }
                    key.push(chars[j]);
                    j += 1;
                }
                if closed {
                    out.push(key);
                    i = j + 2;
                    continue;
                }
            }
        }
        if empty_here(i) {
            out.push(String::new());
        }
        i += 1;
    }
    out
}

/// Length of a `-?\d+(\.\d+)?` number directly followed by `]`, if any.
fn bracket_number(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == start {
        return None;
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    (b.get(i) == Some(&b']')).then_some(i)
}

/// lodash `isKey`: the whole string is one property name.
fn is_key(path: &str, object: &Value) -> bool {
    let plain = path.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain || (!path.contains('.') && !(path.contains('[') && path.contains(']'))) {
        return true;
    }
    matches!(object, Value::Object(o) if o.contains_key(path))
}

fn path_of(path: &str, object: &Value) -> Vec<String> {
    if is_key(path, object) {
        vec![path.to_string()]
    } else {
        to_path(path)
    }
}

/// A canonical array index (`0`, `17`, not `01` or `1.0`).
pub fn is_index(key: &str) -> bool {
    !key.is_empty() && (key == "0" || !key.starts_with('0')) && key.bytes().all(|b| b.is_ascii_digit()) && key.len() <= 10 && key.parse::<u64>().is_ok_and(|n| n < u64::from(u32::MAX))
}

/// `value[key]` as JavaScript reads it from JSON data.
fn prop<'v>(v: &'v Value, key: &str) -> Option<Cow<'v, Value>> {
    match v {
        Value::Object(o) => o.get(key).map(Cow::Borrowed),
        Value::Array(a) if key == "length" => Some(Cow::Owned(Value::from(a.len()))),
        Value::Array(a) if is_index(key) => a.get(key.parse::<usize>().ok()?).map(Cow::Borrowed),
        Value::String(s) if key == "length" => Some(Cow::Owned(Value::from(s.encode_utf16().count()))),
        Value::String(s) if is_index(key) => {
            let unit = *s.encode_utf16().collect::<Vec<u16>>().get(key.parse::<usize>().ok()?)?;
            Some(Cow::Owned(Value::String(String::from_utf16_lossy(&[unit]))))
        }
        _ => None,
    }
}

/// lodash `_.get(object, path)`.
pub fn get<'v>(object: &'v Value, path: &str) -> Option<Cow<'v, Value>> {
    let segs = path_of(path, object);
    let mut cur: Cow<'v, Value> = Cow::Borrowed(object);
    for seg in &segs {
        if cur.is_null() {
            return None;
        }
        cur = match cur {
            Cow::Borrowed(v) => prop(v, seg)?,
            Cow::Owned(v) => Cow::Owned(prop(&v, seg)?.into_owned()),
        };
    }
    Some(cur)
}

/// `_.get` for dot notation, or a plain property read when it is disabled.
pub fn get_field<'v>(object: &'v Value, path: &str, dot_notation: bool) -> Option<Cow<'v, Value>> {
    if dot_notation {
        get(object, path)
    } else {
        prop(object, path)
    }
}

/// Path segments lodash refuses to write through.
pub fn is_unsafe_key(key: &str) -> bool {
    matches!(key, "__proto__" | "constructor" | "prototype")
}

/// lodash `_.set(object, path, value)`. Writes nothing through `__proto__`,
/// `constructor` or `prototype` (lodash's guard) and returns false then.
pub fn set(object: &mut Value, path: &str, value: Value) -> bool {
    let segs = path_of(path, object);
    if segs.iter().any(|s| is_unsafe_key(s)) {
        return false;
    }
    if !object.is_object() && !object.is_array() {
        return false;
    }
    set_segments(object, &segs, value);
    true
}

// A loop, not recursion: a path's length is the user's (a dotted field name
// can nest thousands of levels) and each level would take a stack frame.
fn set_segments(mut nested: &mut Value, mut segs: &[String], value: Value) {
    loop {
        let Some((key, rest)) = segs.split_first() else { return };
        let next_container = || match rest.first() {
            Some(k) if is_index(k) => Value::Array(vec![]),
            _ => Value::Object(Map::new()),
        };
        let slot: &mut Value = match nested {
            Value::Object(o) => {
                if rest.is_empty() {
                    o.insert(key.clone(), value);
                    return;
                }
                let e = o.entry(key.clone()).or_insert(Value::Null);
                if !e.is_object() && !e.is_array() {
                    *e = next_container();
                }
                e
            }
            Value::Array(a) => {
                // Named properties of arrays do not survive JSON; only indexes do.
                let Some(i) = key.parse::<usize>().ok().filter(|_| is_index(key)) else { return };
                if a.len() <= i {
                    a.resize(i + 1, Value::Null);
                }
                if rest.is_empty() {
                    a[i] = value;
                    return;
                }
                if !a[i].is_object() && !a[i].is_array() {
                    a[i] = next_container();
                }
                &mut a[i]
            }
            _ => return,
        };
        nested = slot;
        segs = rest;
    }
}

/// lodash `_.unset(object, path)` (a deleted array element becomes a hole,
/// which JSON writes as `null`).
pub fn unset(object: &mut Value, path: &str) {
    let segs = path_of(path, object);
    let Some((last, parents)) = segs.split_last() else { return };
    let mut cur = object;
    for seg in parents {
        cur = match cur {
            Value::Object(o) => match o.get_mut(seg.as_str()) {
                Some(v) => v,
                None => return,
            },
            Value::Array(a) if is_index(seg) => match seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
    }
    match cur {
        Value::Object(o) => {
            o.shift_remove(last.as_str());
        }
        Value::Array(a) if is_index(last) => {
            if let Some(v) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *v = Value::Null;
            }
        }
        _ => {}
    }
}

/// Removes a field by dot path or, without dot notation, by its literal name.
pub fn unset_field(object: &mut Value, path: &str, dot_notation: bool) {
    if dot_notation {
        unset(object, path);
    } else if let Value::Object(o) = object {
        o.shift_remove(path);
    }
}

/// lodash `_.isEqual` on JSON (numbers by value, keys in any order).
pub fn is_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => json_equal(a, b),
        _ => false,
    }
}

pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => containers_equal(a, b),
        _ => a == b,
    }
}

/// [`json_equal`] of two arrays or two objects, with a list of the pairs
/// left to compare rather than recursion (items can nest thousands of levels).
fn containers_equal<'v>(a: &'v Value, b: &'v Value) -> bool {
    let mut pending = vec![(a, b)];
    while let Some((a, b)) = pending.pop() {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) if x.as_f64() != y.as_f64() => return false,
            (Value::Number(_), Value::Number(_)) => {}
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                pending.extend(x.iter().zip(y).rev());
            }
            (Value::Object(x), Value::Object(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                let start = pending.len();
                for (k, v) in x {
                    match y.get(k) {
                        Some(w) => pending.push((v, w)),
                        None => return false,
                    }
                }
                pending[start..].reverse();
            }
            _ if a != b => return false,
            _ => {}
        }
    }
    true
}

/// JavaScript `typeof`.
pub fn type_of(v: Option<&Value>) -> &'static str {
    match v {
        None => "undefined",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(_) => "object",
    }
}

/// JavaScript `String(v)`.
pub fn js_to_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => num_to_string(n.as_f64().unwrap_or(f64::NAN), n),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| if x.is_null() { String::new() } else { js_to_string(Some(x)) })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
    }
}

/// `JSON.stringify(v)` (key order kept; integral numbers without a fraction).
pub fn json_stringify(v: &Value) -> String {
    serde_json::to_string(&normalize_numbers(v)).unwrap_or_default()
}

fn normalize_numbers(v: &Value) -> Cow<'_, Value> {
    match v {
        Value::Number(n) if n.is_f64() => Cow::Owned(num_value(n.as_f64().unwrap_or(0.0))),
        Value::Array(a) if a.iter().any(needs_normalizing) => Cow::Owned(Value::Array(a.iter().map(|x| normalize_numbers(x).into_owned()).collect())),
        Value::Object(o) if o.values().any(needs_normalizing) => {
            Cow::Owned(Value::Object(o.iter().map(|(k, x)| (k.clone(), normalize_numbers(x).into_owned())).collect()))
        }
        _ => Cow::Borrowed(v),
    }
}

fn needs_normalizing(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(needs_normalizing),
        Value::Object(o) => o.values().any(needs_normalizing),
        _ => false,
    }
}

/// lodash `toNumber`.
pub fn lodash_to_number(v: Option<&Value>) -> f64 {
    let s = match v {
        None => return f64::NAN,
        Some(Value::Number(n)) => return n.as_f64().unwrap_or(f64::NAN),
        Some(Value::Null) => return 0.0,
        Some(Value::Bool(b)) => return f64::from(u8::from(*b)),
        Some(Value::String(s)) => s.clone(),
        Some(other) => js_to_string(Some(other)),
    };
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    if let Some(bits) = lower.strip_prefix("0b").filter(|b| !b.is_empty() && b.bytes().all(|c| c == b'0' || c == b'1')) {
        return u64::from_str_radix(bits, 2).map(|n| n as f64).unwrap_or(f64::NAN);
    }
    if let Some(oct) = lower.strip_prefix("0o").filter(|b| !b.is_empty() && b.bytes().all(|c| (b'0'..=b'7').contains(&c))) {
        return u64::from_str_radix(oct, 8).map(|n| n as f64).unwrap_or(f64::NAN);
    }
    if (lower.starts_with("-0x") || lower.starts_with("+0x")) && lower.len() > 3 {
        return f64::NAN;
    }
    str_to_number(t)
}

/// lodash `_.lt(a, b)`: string comparison when both are strings, numeric otherwise.
pub fn lt(a: Option<&Value>, b: Option<&Value>) -> bool {
    if let (Some(Value::String(x)), Some(Value::String(y))) = (a, b) {
        return utf16_cmp(x, y) == Ordering::Less;
    }
    lodash_to_number(a) < lodash_to_number(b)
}

/// Strings ordered by UTF-16 code units, as JavaScript compares them.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// JavaScript's abstract relational comparison `a < b` (false when undefined).
pub fn js_lt(a: Option<&Value>, b: Option<&Value>) -> bool {
    let pa = to_primitive(a);
    let pb = to_primitive(b);
    if let (Some(Value::String(x)), Some(Value::String(y))) = (pa.as_ref(), pb.as_ref()) {
        return utf16_cmp(x, y) == Ordering::Less;
    }
    let x = pa.as_ref().map_or(f64::NAN, js_to_number);
    let y = pb.as_ref().map_or(f64::NAN, js_to_number);
    x < y
}

/// JavaScript `a > b`.
pub fn js_gt(a: Option<&Value>, b: Option<&Value>) -> bool {
    js_lt(b, a)
}

fn to_primitive(v: Option<&Value>) -> Option<Value> {
    match v {
        Some(Value::Array(_) | Value::Object(_)) => Some(Value::String(js_to_string(v))),
        other => other.cloned(),
    }
}

/// Empty as n8n's Summarize counts it: undefined, null or "".
pub fn is_empty_value(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null)) || v.and_then(Value::as_str) == Some("")
}

/// JavaScript truthiness (undefined is falsy).
pub fn truthy(v: Option<&Value>) -> bool {
    v.is_some_and(super::conditions::truthy)
}

/// The keys `flattenKeys` (n8n's `@utils/utilities`) yields: dot paths to
/// every leaf; empty objects and arrays contribute none.
pub fn flatten_keys(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut prefix = String::new();
    // A list of the containers being walked (with the length of the prefix
    // that leads to each), not recursion: items can nest thousands of levels
    // (a dotted field name), and each level would take a stack frame.
    let mut stack: Vec<(Children<'_>, usize)> = Vec::new();
    match Children::of(v) {
        Some(c) => stack.push((c, 0)),
        None => out.push(String::new()),
    }
    while let Some((children, len)) = stack.last_mut() {
        let len = *len;
        let Some((key, x)) = children.next() else {
            stack.pop();
            continue;
        };
        prefix.truncate(len);
        if len > 0 || stack.len() > 1 {
            prefix.push('.');
        }
        prefix.push_str(&key);
        match Children::of(x) {
            Some(c) => stack.push((c, prefix.len())),
            None if !out.contains(&prefix) => out.push(prefix.clone()),
            None => {}
        }
    }
    out
}

/// The entries of an object or the elements of an array, keyed.
enum Children<'a> {
    Object(serde_json::map::Iter<'a>),
    Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
}

impl<'a> Children<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        match v {
            Value::Object(o) => Some(Children::Object(o.iter())),
            Value::Array(a) => Some(Children::Array(a.iter().enumerate())),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<(std::borrow::Cow<'a, str>, &'a Value)> {
        match self {
            Children::Object(it) => it.next().map(|(k, x)| (std::borrow::Cow::Borrowed(k.as_str()), x)),
            Children::Array(it) => it.next().map(|(i, x)| (std::borrow::Cow::Owned(i.to_string()), x)),
        }
    }
}

/// lodash `_.pick(object, paths)`.
pub fn pick(object: &Value, paths: &[String]) -> Value {
    let mut out = Value::Object(Map::new());
    for p in paths {
        if let Some(v) = get(object, p) {
            let v = v.into_owned();
            if is_key(p, object) {
                if let Value::Object(o) = &mut out {
                    o.insert(p.clone(), v);
                }
            } else {
                set(&mut out, p, v);
            }
        }
    }
    out
}

/// A JavaScript array index as an object key sorts before other keys.
fn js_integer_key(k: &str) -> Option<u32> {
    is_index(k).then(|| k.parse().ok()).flatten()
}

/// An object built from entries as JavaScript orders its keys: integer-like
/// keys ascending first, then the rest in insertion order (a repeated key
/// keeps its first position and the last value).
pub fn js_object(entries: impl IntoIterator<Item = (String, Value)>) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in entries {
        m.insert(k, v);
    }
    js_order(m)
}

/// Reorders a map's keys as JavaScript would enumerate them.
pub fn js_order(m: Map<String, Value>) -> Map<String, Value> {
    if !m.keys().any(|k| js_integer_key(k).is_some()) {
        return m;
    }
    let mut ints: Vec<(u32, String, Value)> = vec![];
    let mut rest = vec![];
    for (k, v) in m {
        match js_integer_key(&k) {
            Some(n) => ints.push((n, k, v)),
            None => rest.push((k, v)),
        }
    }
    ints.sort_by_key(|e| e.0);
    ints.into_iter().map(|(_, k, v)| (k, v)).chain(rest).collect()
}

/// Keys in JavaScript enumeration order, for grouping that n8n does in a plain object.
pub fn js_key_order(keys: &[String]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_by_key(|&i| match js_integer_key(&keys[i]) {
        Some(n) => (0, n, i),
        None => (1, 0, i),
    });
    idx
}

/// `Array.prototype.sort` with a comparator as V8 runs it: binary insertion
/// sort below 64 elements (what n8n's small inputs see, so even inconsistent
/// comparators give V8's order), a stable merge sort beyond that. Never
/// panics on a comparator that is not a total order.
pub fn js_sort<T>(v: &mut Vec<T>, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let n = v.len();
    if n < 2 {
        return;
    }
    if n < 64 {
        // V8 (TimSort's minimum run covers the whole array): a run is counted first (strictly descending runs are reversed),
        // then the rest is binary-inserted.
        let run = count_run_and_make_ascending(v, &mut cmp);
        binary_insertion_sort(v, run, &mut cmp);
        return;
    }
    let mut items: Vec<Option<T>> = v.drain(..).map(Some).collect();
    let mut idx: Vec<usize> = (0..n).collect();
    merge_sort(&mut idx, &mut |&a: &usize, &b: &usize| cmp(items[a].as_ref().expect("present"), items[b].as_ref().expect("present")));
    v.extend(idx.into_iter().filter_map(|i| items[i].take()));
}

fn count_run_and_make_ascending<T>(v: &mut [T], cmp: &mut impl FnMut(&T, &T) -> Ordering) -> usize {
    let n = v.len();
    let mut run = 2;
    let descending = cmp(&v[1], &v[0]) == Ordering::Less;
    let mut i = 2;
    while i < n {
        let o = cmp(&v[i], &v[i - 1]);
        if (descending && o != Ordering::Less) || (!descending && o == Ordering::Less) {
            break;
        }
        run += 1;
        i += 1;
    }
    if descending {
        v[..run].reverse();
    }
    run
}

fn binary_insertion_sort<T>(v: &mut [T], start: usize, cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    for i in start.max(1)..v.len() {
        let (mut left, mut right) = (0, i);
        while left < right {
            let mid = left + ((right - left) >> 1);
            if cmp(&v[i], &v[mid]) == Ordering::Less {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        v[left..=i].rotate_right(1);
    }
}

fn merge_sort<T: Copy>(v: &mut [T], cmp: &mut impl FnMut(&T, &T) -> Ordering) {
    let mut scratch = Vec::with_capacity(v.len() / 2 + 1);
    merge_sort_in(v, cmp, &mut scratch);
}

/// [`merge_sort`] with one scratch buffer for all merges: only the left half
/// is copied out, and the merge fills `v` from the front, never past the
/// right half's unread part.
fn merge_sort_in<T: Copy>(v: &mut [T], cmp: &mut impl FnMut(&T, &T) -> Ordering, scratch: &mut Vec<T>) {
    let n = v.len();
    if n <= 22 {
        binary_insertion_sort(v, 1, cmp);
        return;
    }
    let mid = n / 2;
    merge_sort_in(&mut v[..mid], cmp, scratch);
    merge_sort_in(&mut v[mid..], cmp, scratch);
    scratch.clear();
    scratch.extend_from_slice(&v[..mid]);
    let (mut i, mut j, mut k) = (0, mid, 0);
    while i < scratch.len() && j < n {
        if cmp(&v[j], &scratch[i]) == Ordering::Less {
            v[k] = v[j];
            j += 1;
        } else {
            v[k] = scratch[i];
            i += 1;
        }
        k += 1;
    }
    // what is left of the right half is already in place
    for x in &scratch[i..] {
        v[k] = *x;
        k += 1;
    }
}

/// A comma-separated field list (n8n's `prepareFieldsArray`): trimmed, empty
/// entries dropped; an array is taken as it is.
pub fn fields_list(v: Option<&Value>, param: &str) -> crate::error::Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::String(s)) => Ok(s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(str::to_string).collect()),
        Some(Value::Array(a)) => Ok(a.iter().map(|x| js_to_string(Some(x))).collect()),
        Some(_) => Err(crate::error::EngineError::node(format!(
            "The '{param}' parameter must be a string of fields separated by commas or an array of strings."
        ))),
    }
}

/// A JavaScript `RegExp` source as a Rust regex (no lookaround or
/// backreferences: those are refused with the engine's error).
pub fn js_regex(pattern: &str, case_insensitive: bool) -> crate::error::Result<regex::Regex> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .build()
        .map_err(|e| crate::error::EngineError::node(format!("Invalid regular expression: /{pattern}/: {}", e.to_string().lines().last().unwrap_or("invalid pattern"))))
}

/// `s.replace(re, replacement)` for a non-global JavaScript regex: the first
/// match, with `$1`, `$<name>`, `$&`, `` $` ``, `$'` and `$$` in the replacement.
pub fn js_replace_first(re: &regex::Regex, s: &str, replacement: &str) -> String {
    let Some(caps) = re.captures(s) else { return s.to_string() };
    let Some(m) = caps.get(0) else { return s.to_string() };
    let mut out = String::with_capacity(s.len() + replacement.len());
    out.push_str(&s[..m.start()]);
    let r: Vec<char> = replacement.chars().collect();
    let mut i = 0;
    while i < r.len() {
        if r[i] != '$' || i + 1 >= r.len() {
            out.push(r[i]);
            i += 1;
            continue;
        }
        match r[i + 1] {
            '$' => {
                out.push('$');
                i += 2;
            }
            '&' => {
                out.push_str(m.as_str());
                i += 2;
            }
            '`' => {
                out.push_str(&s[..m.start()]);
                i += 2;
            }
            '\'' => {
                out.push_str(&s[m.end()..]);
                i += 2;
            }
            '<' => match r[i + 2..].iter().position(|&c| c == '>') {
                Some(end) => {
                    let name: String = r[i + 2..i + 2 + end].iter().collect();
                    out.push_str(caps.name(&name).map_or("", |g| g.as_str()));
                    i += 3 + end;
                }
                None => {
                    out.push('$');
                    i += 1;
                }
            },
            d if d.is_ascii_digit() => {
                // Two digits when that group exists, else one (JavaScript's rule).
                let one = d.to_digit(10).unwrap_or(0) as usize;
                let two = r.get(i + 2).and_then(|c| c.to_digit(10)).map(|x| one * 10 + x as usize);
                match two.filter(|&n| n >= 1 && n < caps.len()) {
                    Some(n) => {
                        out.push_str(caps.get(n).map_or("", |g| g.as_str()));
                        i += 3;
                    }
                    None if one >= 1 && one < caps.len() => {
                        out.push_str(caps.get(one).map_or("", |g| g.as_str()));
                        i += 2;
                    }
                    None => {
                        out.push('$');
                        i += 1;
                    }
                }
            }
            _ => {
                out.push('$');
                i += 1;
            }
        }
    }
    out.push_str(&s[m.end()..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_split_like_lodash() {
        assert_eq!(to_path("a.b[0].c"), ["a", "b", "0", "c"]);
        assert_eq!(to_path("a[\"b.c\"]"), ["a", "b.c"]);
        assert_eq!(to_path("a..b"), ["a", "", "b"]);
        assert_eq!(to_path(".a"), ["", "a"]);
    }

    #[test]
    fn get_set_unset() {
        let v = json!({"a": {"b": [1, {"c": 2}]}, "x.y": 3, "s": "héllo"});
        assert_eq!(get(&v, "a.b[1].c").as_deref(), Some(&json!(2)));
        assert_eq!(get(&v, "a.b.1.c").as_deref(), Some(&json!(2)));
        assert_eq!(get(&v, "x.y").as_deref(), Some(&json!(3)));
        assert_eq!(get(&v, "a.b.length").as_deref(), Some(&json!(2)));
        assert_eq!(get(&v, "s.1").as_deref(), Some(&json!("é")));
        assert!(get(&v, "a.z.q").is_none());
        let mut w = json!({});
        assert!(set(&mut w, "p.0.q", json!(1)));
        assert_eq!(w, json!({"p": [{"q": 1}]}));
        assert!(!set(&mut w, "__proto__.polluted", json!(1)));
        unset(&mut w, "p.0.q");
        assert_eq!(w, json!({"p": [{}]}));
    }

    #[test]
    fn comparisons_follow_javascript() {
        assert!(lt(Some(&json!("a")), Some(&json!("b"))));
        assert!(lt(Some(&json!("2")), Some(&json!(10))));
        assert!(!lt(Some(&json!("x")), Some(&json!(10))));
        assert!(js_lt(Some(&json!([1, 2])), Some(&json!("1,3"))));
        assert!(is_equal(Some(&json!({"a": 1.0, "b": [2]})), Some(&json!({"b": [2], "a": 1}))));
        assert!(!is_equal(Some(&json!({"a": [1, {"b": [2]}]})), Some(&json!({"a": [1, {"b": [3]}]}))));
        assert!(!is_equal(Some(&json!({"a": [1]})), Some(&json!({"a": {"0": 1}}))));
        assert!(!is_equal(Some(&json!({"a": 1})), Some(&json!({"b": 1}))));
        assert_eq!(js_to_string(Some(&json!([1, null, [2, 3]]))), "1,,2,3");
    }

    #[test]
    fn integer_keys_come_first() {
        let m = js_object([("b".into(), json!(1)), ("2".into(), json!(2)), ("1".into(), json!(3)), ("01".into(), json!(4))]);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["1", "2", "b", "01"]);
    }

    #[test]
    fn sort_is_stable_and_tolerates_bad_comparators() {
        let mut v: Vec<(i32, i32)> = (0..100).map(|i| (i % 3, i)).collect();
        js_sort(&mut v, |a, b| a.0.cmp(&b.0));
        assert!(v.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1)));
        let mut w: Vec<i32> = (0..50).collect();
        js_sort(&mut w, |_, _| Ordering::Less);
        assert_eq!(w.len(), 50);
    }

    #[test]
    fn merge_sort_matches_a_stable_sort() {
        // sizes past the insertion-sort cut-off, odd and even halves, many ties
        for n in [64, 65, 100, 1000, 4097] {
            let v: Vec<(u32, usize)> = (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761) % 37, i)).collect();
            let mut expected = v.clone();
            expected.sort_by_key(|x| x.0);
            let mut got = v.clone();
            js_sort(&mut got, |a, b| a.0.cmp(&b.0));
            assert_eq!(got, expected, "n = {n}");
            let mut desc = v;
            js_sort(&mut desc, |a, b| b.0.cmp(&a.0));
            expected.sort_by_key(|x| std::cmp::Reverse(x.0));
            assert_eq!(desc, expected, "n = {n} descending");
        }
    }

    #[test]
    fn javascript_replacements() {
        let re = js_regex("(?<first>a)(b)", false).expect("regex");
        assert_eq!(js_replace_first(&re, "xaby ab", "[$2$1|$<first>|$&|$$]"), "x[ba|a|ab|$]y ab");
        assert!(js_regex("(", false).is_err());
    }

    #[test]
    fn flattened_keys() {
        assert_eq!(flatten_keys(&json!({"a": {"b": 1, "c": [2, 3]}, "d": {}, "e": null})), ["a.b", "a.c.0", "a.c.1", "e"]);
    }
}
