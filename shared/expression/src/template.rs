//! Splitting `{{ … }}` templates and preparing code chunks for QuickJS.

#[derive(Debug, Clone, PartialEq)]
pub enum Chunk<'a> {
    Text(&'a str),
    Code(&'a str),
}

/// Splits a template (without the leading `=`) into text and code chunks the
/// way n8n's splitter does: a code chunk runs from `{{` to the next `}}`; an
/// unclosed `{{` makes the rest of the template code. The first chunk is
/// always text (possibly empty); empty trailing text is omitted.
pub fn split(t: &str) -> Vec<Chunk<'_>> {
    let mut out = Vec::new();
    let mut rest = t;
    loop {
        match rest.find("{{") {
            None => {
                if !rest.is_empty() || out.is_empty() {
                    out.push(Chunk::Text(rest));
                }
                return out;
            }
            Some(open) => {
                out.push(Chunk::Text(&rest[..open]));
                let after = &rest[open + 2..];
                match after.find("}}") {
                    Some(close) => {
                        out.push(Chunk::Code(&after[..close]));
                        rest = &after[close + 2..];
                        if rest.is_empty() {
                            return out;
                        }
                    }
                    None => {
                        out.push(Chunk::Code(after));
                        return out;
                    }
                }
            }
        }
    }
}

/// True when the template is exactly one `{{ }}` block: its typed value is the
/// result, not a string.
pub fn is_single(chunks: &[Chunk]) -> bool {
    matches!(chunks, [Chunk::Text(""), Chunk::Code(_)])
}

/// Method names of n8n's extension functions (all types), sorted. Calls
/// `x.name(…)` of these are rewritten to `x.__n8n_name(…)`, the dispatchers
/// `js/prelude.js` installs (a unit test keeps both lists equal).
pub const EXTENSION_NAMES: &[&str] = &[
    "abs", "append", "average", "base64Decode", "base64Encode", "beginningOf", "ceil", "chunk",
    "compact", "diffTo", "diffToNow", "difference", "endOfMonth", "extract", "extractDomain",
    "extractEmail", "extractUrl", "extractUrlPath", "first", "floor", "format", "hasField",
    "hash", "intersection", "isBetween", "isBlank", "isDomain", "isDst", "isEmail", "isEmpty", "isEven",
    "isInLast", "isInteger", "isNotBlank", "isNotEmpty", "isNumeric", "isOdd", "isUrl", "isWeekend",
    "keepFieldsContaining", "keys", "last", "length", "max", "merge", "mergeIntoObject", "min",
    "minus", "parseJson", "pluck", "plus", "quote", "randomItem", "removeDuplicates",
    "removeField", "removeFieldsContaining", "removeMarkdown", "removeTags", "renameKeys",
    "replaceSpecialChars", "round", "smartJoin", "sum", "toBoolean", "toDate", "toDateTime",
    "toDecimalNumber", "toFloat", "toInt", "toJsonString", "toNumber", "toSentenceCase",
    "toSnakeCase", "toTitleCase", "toWholeNumber", "union", "unique", "urlDecode", "urlEncode",
    "values",
];

/// Prepares a `{{ }}` code chunk for QuickJS: drops trailing semicolons and
/// rewrites extension calls.
pub fn prepare_code(code: &str) -> String {
    let code = code.trim_end();
    rewrite_extension_calls(code.trim_end_matches(';'))
}

/// Renames calls of extension methods (`"ab".length()`, `$json.keys()`) to the
/// sandbox's dispatchers, outside strings, comments and regex literals, so
/// plain property reads (`$json.values`) keep their JavaScript meaning. The
/// receiver is wrapped in `__n8n_v(…)`, which turns `null`/`undefined` into
/// a value the dispatcher sees (n8n: `$json.missing.isEmpty()` is `true`, other
/// functions fail with "… can't be used on undefined value"); receivers of an
/// optional chain (`a?.b.isEmpty()`, `a?.isEmpty()`) keep JavaScript's short-circuit.
pub fn rewrite_extension_calls(code: &str) -> String {
    let mut out = String::with_capacity(code.len() + 8);
    let b = code.as_bytes();
    let mut i = 0;
    // last significant char outside literals, to tell regex literals from division
    let mut prev: u8 = b'(';
    let mut prev_word = String::new();
    let mut template_depth: Vec<i32> = Vec::new(); // brace depth per open `${`
    // where in `out` the postfix expression being read started (the receiver
    // of a following `.name(…)`), and whether it contains `?.`
    let mut chain: Option<usize> = None;
    let mut chain_opt = false;
    // open `(`/`[`: the chain before it, its position in `out`, and whether it is a call/index
    let mut groups: Vec<(Option<usize>, bool, usize, bool)> = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                let end = skip_string(b, i);
                chain = Some(out.len());
                chain_opt = false;
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
                prev = b'a';
                prev_word.clear();
            }
            b'`' => {
                let end = skip_template(b, i, &mut template_depth);
                chain = Some(out.len());
                chain_opt = false;
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
                prev = b'a';
                prev_word.clear();
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = code.get(i..).unwrap_or("").find('\n').map(|e| i + e).unwrap_or(b.len());
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = code.get(i + 2..).unwrap_or("").find("*/").map(|e| i + 2 + e + 2).unwrap_or(b.len());
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
            }
            b'/' if regex_allowed(prev, &prev_word) => {
                let end = skip_regex(b, i);
                chain = Some(out.len());
                chain_opt = false;
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
                prev = b'a';
                prev_word.clear();
            }
            b'}' if template_depth.last() == Some(&0) => {
                // end of a `${ … }` substitution: continue the template literal
                template_depth.pop();
                let end = skip_template_rest(b, i + 1, &mut template_depth);
                out.push_str(code.get(i..end).unwrap_or(""));
                i = end;
                prev = b'a';
                chain = None;
            }
            b'.' => {
                let rest = code.get(i + 1..).unwrap_or("");
                let name_len = rest
                    .bytes()
                    .take_while(|d| d.is_ascii_alphanumeric() || *d == b'_' || *d == b'$')
                    .count();
                let name = &rest[..name_len];
                let spread = i > 0 && b[i - 1] == b'.';
                if name_len > 0
                    && !spread
                    && rest.get(name_len..).is_some_and(|r| r.trim_start().starts_with('('))
                    && EXTENSION_NAMES.binary_search(&name).is_ok()
                {
                    let optional = out.ends_with('?');
                    if let (Some(s), false, false) = (chain, optional, chain_opt) {
                        out.insert_str(s, "__n8n_v(");
                        out.push(')');
                    }
                    out.push_str(".__n8n_");
                    out.push_str(name);
                    i += 1 + name_len;
                    prev = b'a';
                } else if spread {
                    out.push('.');
                    i += 1;
                    // `...x`: what follows starts a new expression
                    prev = b',';
                    chain = None;
                } else {
                    out.push('.');
                    i += 1;
                    prev = b'.';
                }
                prev_word.clear();
            }
            b'(' | b'[' => {
                let is_call = ((prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'$') && !is_keyword(&prev_word))
                    || prev == b')'
                    || prev == b']';
                groups.push((chain, chain_opt, out.len(), is_call));
                out.push(c as char);
                chain = None;
                chain_opt = false;
                prev = c;
                prev_word.clear();
                i += 1;
            }
            b')' | b']' => {
                match groups.pop() {
                    Some((before, opt, open, is_call)) => {
                        if is_call {
                            chain = before;
                            chain_opt = opt;
                        } else {
                            chain = Some(open);
                            chain_opt = false;
                        }
                    }
                    None => chain = None,
                }
                out.push(c as char);
                prev = c;
                prev_word.clear();
                i += 1;
            }
            _ => {
                if let Some(d) = template_depth.last_mut() {
                    if c == b'{' {
                        *d += 1;
                    } else if c == b'}' {
                        *d -= 1;
                    }
                }
                let ch_len = code.get(i..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8);
                let optional_dot = c == b'?' && b.get(i + 1) == Some(&b'.') && !b.get(i + 2).is_some_and(u8::is_ascii_digit);
                let ident = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
                let adjacent = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$' || b[i - 1] >= 0x80);
                if ident && !adjacent && prev != b'.' {
                    if let Some((ternary, end)) = if_as_ternary(code, i) {
                        // n8n rewrites `$if(a, b, c)` to `a ? b : c`: only one branch runs
                        chain = Some(out.len());
                        chain_opt = false;
                        out.push_str(&ternary);
                        i = end;
                        prev = b')';
                        prev_word.clear();
                        continue;
                    }
                }
                if ident && !adjacent {
                    let after_word = prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'$';
                    // a member name continues the chain; after `new` it started at `new`
                    if prev != b'.' && !(after_word && prev_word == "new") {
                        chain = Some(out.len());
                        chain_opt = false;
                    }
                    prev_word.clear();
                } else if ident {
                } else if optional_dot {
                    chain_opt = true;
                } else if !c.is_ascii_whitespace() {
                    chain = None;
                }
                out.push_str(code.get(i..i + ch_len).unwrap_or(""));
                if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' {
                    prev_word.push(c as char);
                    prev = c;
                } else if !c.is_ascii_whitespace() {
                    prev = c;
                    prev_word.clear();
                }
                i += ch_len;
            }
        }
    }
    out
}

/// `$if(test, then[, else])` at `at` as `((test) ? (then) : (else))`, with
/// a missing `else` as `false` (n8n's rewrite), and the index after the call.
/// `None` when it is not such a call (fewer than two arguments, spread).
fn if_as_ternary(code: &str, at: usize) -> Option<(String, usize)> {
    let rest = code.get(at..)?;
    let after = rest.strip_prefix("$if")?;
    if after.bytes().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$') {
        return None;
    }
    let open = at + 3 + (after.len() - after.trim_start().len());
    if code.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    let (args, close) = call_args(code, open)?;
    if args.len() < 2 || args.len() > 3 || args.iter().any(|a| a.trim_start().starts_with("...") || a.trim().is_empty()) {
        return None;
    }
    let arg = |n: usize| args.get(n).map(|a| rewrite_extension_calls(a.trim()));
    let otherwise = arg(2).unwrap_or_else(|| "false".into());
    Some((format!("(({}) ? ({}) : ({}))", arg(0)?, arg(1)?, otherwise), close + 1))
}

/// The top-level comma-separated arguments of the call whose `(` is at
/// `open`, and the index of its `)`; strings, templates and nesting skipped.
fn call_args(code: &str, open: usize) -> Option<(Vec<&str>, usize)> {
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut start = open + 1;
    let mut args = Vec::new();
    let mut i = open + 1;
    let mut prev = b'(';
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => i = skip_string(b, i),
            b'`' => i = skip_template(b, i, &mut Vec::new()),
            b'/' if b.get(i + 1) == Some(&b'/') || b.get(i + 1) == Some(&b'*') => return None,
            b'/' if matches!(prev, b'(' | b',' | b'=' | b':' | b'[' | b'!' | b'&' | b'|' | b'?' | b'{' | b'}' | b';') => i = skip_regex(b, i),
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' if depth > 0 => {
                depth -= 1;
                i += 1;
            }
            b')' => {
                args.push(code.get(start..i)?);
                return Some((args, i));
            }
            b',' if depth == 0 => {
                args.push(code.get(start..i)?);
                start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
        if !c.is_ascii_whitespace() {
            prev = c;
        }
    }
    None
}

/// Words after which `(`/`[` is not a call and a name starts a new expression.
fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "return" | "typeof" | "instanceof" | "in" | "of" | "new" | "delete" | "void" | "throw" | "case" | "do"
            | "else" | "if" | "while" | "for" | "switch" | "catch" | "await" | "yield" | "const" | "let" | "var"
            | "with" | "function"
    )
}

fn regex_allowed(prev: u8, prev_word: &str) -> bool {
    if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'$' {
        return matches!(
            prev_word,
            "return" | "typeof" | "instanceof" | "in" | "of" | "new" | "delete" | "void" | "throw"
                | "case" | "do" | "else"
        );
    }
    !matches!(prev, b')' | b']' | b'}')
}

fn skip_string(b: &[u8], start: usize) -> usize {
    let q = b[start];
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == q => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_regex(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    let mut in_class = false;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'[' => {
                in_class = true;
                i += 1
            }
            b']' => {
                in_class = false;
                i += 1
            }
            b'/' if !in_class => {
                i += 1;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                return i;
            }
            b'\n' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_template(b: &[u8], start: usize, depth: &mut Vec<i32>) -> usize {
    skip_template_rest(b, start + 1, depth)
}

/// Scans template literal text from `i` up to the closing backtick or to a
/// `${`, which opens a code region tracked in `depth`.
fn skip_template_rest(b: &[u8], mut i: usize, depth: &mut Vec<i32>) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => return i + 1,
            b'$' if b.get(i + 1) == Some(&b'{') => {
                depth.push(0);
                return i + 2;
            }
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_n8n() {
        assert_eq!(split("{{ 1 }}"), vec![Chunk::Text(""), Chunk::Code(" 1 ")]);
        assert_eq!(
            split(" {{a}}x{{b}}"),
            vec![Chunk::Text(" "), Chunk::Code("a"), Chunk::Text("x"), Chunk::Code("b")]
        );
        assert_eq!(split("TRUE"), vec![Chunk::Text("TRUE")]);
        assert_eq!(split(""), vec![Chunk::Text("")]);
        assert!(is_single(&split("{{ $json.a }}")));
        assert!(!is_single(&split("{{ $json.a }} ")));
    }

    #[test]
    fn renames_extension_calls_only() {
        assert_eq!(prepare_code("\"ab\".length()"), "__n8n_v(\"ab\").__n8n_length()");
        assert_eq!(prepare_code("x.length + 1;"), "x.length + 1");
        assert_eq!(prepare_code("$json.values ?? $json.keys ()"), "$json.values ?? __n8n_v($json).__n8n_keys ()");
        assert_eq!(prepare_code("a?.isEmpty() && b.toUpperCase()"), "a?.__n8n_isEmpty() && b.toUpperCase()");
        assert_eq!(prepare_code("a?.b.isEmpty()"), "a?.b.__n8n_isEmpty()");
        assert_eq!(prepare_code("[...values()]"), "[...values()]");
        assert_eq!(prepare_code("'.length()'"), "'.length()'");
        assert_eq!(prepare_code("`${a.length()}`"), "`${__n8n_v(a).__n8n_length()}`");
        assert_eq!(prepare_code("/.length()/.test(s)"), "/.length()/.test(s)");
        assert_eq!(prepare_code("a / b.length()"), "a / __n8n_v(b).__n8n_length()");
        assert_eq!(prepare_code("x.lengthy()"), "x.lengthy()");
        assert_eq!(
            prepare_code("$json[\"a b\"].c(1, \")\").isEmpty().isNotEmpty()"),
            "__n8n_v(__n8n_v($json[\"a b\"].c(1, \")\")).__n8n_isEmpty()).__n8n_isNotEmpty()"
        );
        assert_eq!(prepare_code("!new Date(x).toDateTime()"), "!__n8n_v(new Date(x)).__n8n_toDateTime()");
        assert_eq!(prepare_code("return (a + b).round(2)"), "return __n8n_v((a + b)).__n8n_round(2)");
        assert_eq!(prepare_code("f(x.first(), y)"), "f(__n8n_v(x).__n8n_first(), y)");
        assert_eq!(prepare_code("items\n  .map(i => i)\n  .first()"), "__n8n_v(items\n  .map(i => i)\n  ).__n8n_first()");
        assert_eq!(prepare_code("$if(a > 1, f(x, y), 'no, really')"), "((a > 1) ? (f(x, y)) : ('no, really'))");
        assert_eq!(prepare_code("$if(a, $if(b, 1, 2))"), "((a) ? (((b) ? (1) : (2))) : (false))");
        assert_eq!(prepare_code("$if(a, b).isEmpty()"), "__n8n_v(((a) ? (b) : (false))).__n8n_isEmpty()");
        assert_eq!(prepare_code("$if(a)"), "$if(a)");
        assert_eq!(prepare_code("x.$if(a, b)"), "x.$if(a, b)");
    }

    #[test]
    fn extension_names_sorted() {
        assert!(EXTENSION_NAMES.windows(2).all(|w| w[0] < w[1]));
    }
}
