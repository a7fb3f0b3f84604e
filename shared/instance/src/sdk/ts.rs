//! Strips TypeScript down to JavaScript the sandbox can run: import
//! statements, `interface`/`type` declarations, type annotations on
//! variables, parameters and return types, `as`/`satisfies` casts, `!`
//! non-null assertions and generic call arguments. A token-level pass, not a
//! TypeScript parser: it covers what workflow code uses (the builder calls,
//! object literals, arrow functions) and leaves anything else untouched for
//! the JavaScript parser to judge.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Whitespace and comments, kept verbatim.
    Trivia(String),
    Ident(String),
    /// String, template or number literal, kept verbatim.
    Lit(String),
    Punct(String),
}

impl Tok {
    fn text(&self) -> &str {
        match self {
            Tok::Trivia(s) | Tok::Ident(s) | Tok::Lit(s) | Tok::Punct(s) => s,
        }
    }
    fn is(&self, p: &str) -> bool {
        matches!(self, Tok::Punct(x) | Tok::Ident(x) if x == p)
    }
}

const PUNCTS: &[&str] = &[
    "...", "===", "!==", "**=", "<<=", ">>=", "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "**",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let take = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            out.push(Tok::Trivia(take(start, i)));
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            out.push(Tok::Trivia(take(start, i)));
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i = (i + 2).min(chars.len());
            out.push(Tok::Trivia(take(start, i)));
        } else if c == '"' || c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    return Err(format!("unterminated string starting at character {start}"));
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err(format!("unterminated string starting at character {start}"));
            }
            i += 1;
            out.push(Tok::Lit(take(start, i)));
        } else if c == '`' {
            // Template literal: `${ }` nesting is tracked by brace depth.
            i += 1;
            let mut depth = 0usize;
            while i < chars.len() {
                match chars[i] {
                    '\\' => i += 1,
                    '`' if depth == 0 => break,
                    '$' if chars.get(i + 1) == Some(&'{') => {
                        depth += 1;
                        i += 1;
                    }
                    '}' if depth > 0 => depth -= 1,
                    _ => {}
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err(format!("unterminated template literal starting at character {start}"));
            }
            i += 1;
            out.push(Tok::Lit(take(start, i)));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Lit(take(start, i)));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            out.push(Tok::Ident(take(start, i)));
        } else if c == '/' && regex_allowed(&out) {
            // A regular expression literal.
            i += 1;
            let mut class = false;
            while i < chars.len() && (class || chars[i] != '/') {
                match chars[i] {
                    '\\' => i += 1,
                    '[' => class = true,
                    ']' => class = false,
                    '\n' => return Err(format!("unterminated regular expression at character {start}")),
                    _ => {}
                }
                i += 1;
            }
            i += 1;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push(Tok::Lit(take(start, i.min(chars.len()))));
        } else {
            let rest: String = chars[i..(i + 3).min(chars.len())].iter().collect();
            let p = PUNCTS.iter().find(|p| rest.starts_with(**p)).map(|p| p.to_string()).unwrap_or_else(|| c.to_string());
            i += p.chars().count();
            out.push(Tok::Punct(p));
        }
    }
    Ok(out)
}

fn last_sig(toks: &[Tok]) -> Option<&Tok> {
    toks.iter().rev().find(|t| !matches!(t, Tok::Trivia(_)))
}

fn regex_allowed(prev: &[Tok]) -> bool {
    match last_sig(prev) {
        None => true,
        Some(Tok::Lit(_)) => false,
        Some(Tok::Ident(s)) => matches!(s.as_str(), "return" | "typeof" | "case" | "in" | "of" | "new" | "delete" | "void" | "throw"),
        Some(Tok::Punct(p)) => !matches!(p.as_str(), ")" | "]" | "}"),
        Some(Tok::Trivia(_)) => true,
    }
}

/// Index of the next significant token at or after `i`.
fn next_sig(toks: &[Tok], mut i: usize) -> Option<usize> {
    while i < toks.len() {
        if !matches!(toks[i], Tok::Trivia(_)) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Skips a type starting at `i`; returns the index just past it. A type
/// ends at depth 0 on `,`, `)`, `]`, `}`, `;`, `=` (not `=>` inside a
/// function type), `{` after a complete type (a function body), or a line
/// break after a complete type.
fn skip_type(toks: &[Tok], mut i: usize, stop_at_brace: bool) -> usize {
    let mut depth = 0i32;
    let mut complete = false;
    // Just past the type's last significant token: trailing trivia is kept.
    let mut end = i;
    while i < toks.len() {
        let t = &toks[i];
        match t {
            Tok::Trivia(s) => {
                if depth == 0 && complete && s.contains('\n') {
                    // A following `|`/`&` continues the type on the next line.
                    let n = next_sig(toks, i);
                    if !n.is_some_and(|n| toks[n].is("|") || toks[n].is("&")) {
                        return end;
                    }
                }
                i += 1;
                continue;
            }
            Tok::Punct(p) => match p.as_str() {
                "(" | "[" | "<" => {
                    depth += 1;
                    complete = false;
                }
                "{" => {
                    if depth == 0 && complete && stop_at_brace {
                        return end;
                    }
                    depth += 1;
                    complete = false;
                }
                ")" | "]" | ">" | "}" => {
                    if depth == 0 {
                        return end;
                    }
                    depth -= 1;
                    complete = depth == 0;
                }
                "=>" => {
                    if depth == 0 && complete && stop_at_brace {
                        return end;
                    }
                    complete = false;
                }
                "," | ";" | "=" if depth == 0 => return end,
                "|" | "&" | "?" | ":" | "." => complete = false,
                _ => {}
            },
            Tok::Ident(_) | Tok::Lit(_) => {
                if depth == 0 && complete {
                    return end;
                }
                complete = depth == 0;
            }
        }
        i += 1;
        end = i;
    }
    end
}

/// Paren/bracket/brace frames, to tell parameter lists from calls and
/// object literals, and to spot ternaries.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Frame {
    /// `( … )`; `params` when it looks like a parameter list.
    Paren { params: bool, ternaries: u32 },
    Brace { ternaries: u32 },
    Bracket { ternaries: u32 },
}

/// Does the `(` at `open` start an arrow function's or a function's
/// parameter list? (`function f(`, `(a: T) =>`, `(a, b): R =>`)
fn is_param_list(toks: &[Tok], out: &[Tok], open: usize) -> bool {
    if let Some(Tok::Ident(s)) = last_sig(out) {
        if s == "function" {
            return true;
        }
        // `function name(` : the token before the name is `function`.
        let sig: Vec<&Tok> = out.iter().rev().filter(|t| !matches!(t, Tok::Trivia(_))).take(2).collect();
        if sig.len() == 2 && sig[1].is("function") {
            return true;
        }
    }
    // Find the matching `)` and look for `=>` or `:` (return type) after it.
    let mut depth = 0;
    let mut i = open;
    while i < toks.len() {
        if toks[i].is("(") {
            depth += 1;
        } else if toks[i].is(")") {
            depth -= 1;
            if depth == 0 {
                break;
            }
        }
        i += 1;
    }
    match next_sig(toks, i + 1) {
        Some(n) if toks[n].is("=>") => true,
        Some(n) if toks[n].is(":") => {
            // `(a): T =>` is an arrow; `cond ? (a) : b` is a ternary.
            let after = skip_type(toks, n + 1, true);
            next_sig(toks, after).is_some_and(|m| toks[m].is("=>") || toks[m].is("{"))
        }
        _ => false,
    }
}

fn ternaries(f: &mut Frame) -> &mut u32 {
    match f {
        Frame::Paren { ternaries, .. } | Frame::Brace { ternaries } | Frame::Bracket { ternaries } => ternaries,
    }
}

/// TypeScript → JavaScript (see the module docs for what is handled).
pub fn strip(src: &str) -> Result<String, String> {
    let toks = lex(src)?;
    let mut out: Vec<Tok> = Vec::with_capacity(toks.len());
    let mut frames: Vec<Frame> = vec![Frame::Brace { ternaries: 0 }];
    let mut i = 0;
    // After `const|let|var` until `=`: a `:` there starts a type.
    let mut in_decl = false;
    while i < toks.len() {
        let t = &toks[i];
        let at_statement_start = matches!(last_sig(&out), None | Some(Tok::Punct(_)))
            && last_sig(&out).is_none_or(|p| p.is(";") || p.is("}") || p.is("{"));
        match t {
            Tok::Ident(w) if at_statement_start && (w == "import") && next_sig(&toks, i + 1).is_some_and(|n| !toks[n].is("(")) => {
                // Drop the statement up to its `;` or the line end after the module string.
                while i < toks.len() {
                    if toks[i].is(";") {
                        i += 1;
                        break;
                    }
                    if let Tok::Lit(s) = &toks[i] {
                        if (s.starts_with('\'') || s.starts_with('"')) && i > 0 && toks[..i].iter().rev().find(|t| !matches!(t, Tok::Trivia(_))).is_some_and(|p| p.is("from") || p.is("import")) {
                            i += 1;
                            if next_sig(&toks, i).is_some_and(|n| toks[n].is(";")) {
                                i = next_sig(&toks, i).map_or(i, |n| n + 1);
                            }
                            break;
                        }
                    }
                    i += 1;
                }
                continue;
            }
            Tok::Ident(w)
                if at_statement_start
                    && (w == "interface" || (w == "type" && next_sig(&toks, i + 1).is_some_and(|n| matches!(toks[n], Tok::Ident(_))))) =>
            {
                if w == "interface" {
                    // interface Name [extends X] { ... }
                    while i < toks.len() && !toks[i].is("{") {
                        i += 1;
                    }
                    let mut depth = 0;
                    while i < toks.len() {
                        if toks[i].is("{") {
                            depth += 1;
                        } else if toks[i].is("}") {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                        }
                        i += 1;
                    }
                } else {
                    // type Name<T> = ...;
                    while i < toks.len() && !toks[i].is("=") {
                        i += 1;
                    }
                    i = skip_type(&toks, i + 1, false);
                    if i < toks.len() && toks[i].is(";") {
                        i += 1;
                    }
                }
                continue;
            }
            Tok::Ident(w) if at_statement_start && w == "export" => {
                // ES module exports: `export default X` → `__exports.default = X`; `export const` → `const`.
                match next_sig(&toks, i + 1) {
                    Some(n) if toks[n].is("default") => {
                        out.push(Tok::Ident("__exports.default =".into()));
                        i = n + 1;
                    }
                    Some(n) => i = n,
                    None => i += 1,
                }
                continue;
            }
            Tok::Ident(w) if at_statement_start && w == "declare" => {
                while i < toks.len() && !toks[i].is(";") && !matches!(&toks[i], Tok::Trivia(s) if s.contains('\n')) {
                    i += 1;
                }
                continue;
            }
            Tok::Ident(w) if w == "const" || w == "let" || w == "var" => {
                in_decl = true;
                out.push(t.clone());
                i += 1;
                continue;
            }
            Tok::Ident(w) if (w == "as" || w == "satisfies") && matches!(last_sig(&out), Some(Tok::Ident(_) | Tok::Lit(_)) | Some(Tok::Punct(_)))
                && last_sig(&out).is_some_and(|p| !matches!(p, Tok::Punct(x) if !matches!(x.as_str(), ")" | "]" | "}"))) =>
            {
                // `x as T` → `x`: the space before `as` goes too.
                while matches!(out.last(), Some(Tok::Trivia(_))) {
                    out.pop();
                }
                i = skip_type(&toks, i + 1, false);
                continue;
            }
            Tok::Punct(p) if p == "!" && matches!(last_sig(&out), Some(Tok::Ident(_)) | Some(Tok::Punct(_)))
                && last_sig(&out).is_some_and(|x| matches!(x, Tok::Ident(_)) || x.is(")") || x.is("]"))
                && next_sig(&toks, i + 1).is_some_and(|n| toks[n].is(".") || toks[n].is(")") || toks[n].is(";") || toks[n].is(",")) =>
            {
                // Non-null assertion `x!.y`.
                i += 1;
                continue;
            }
            Tok::Punct(p) if p == "<" && matches!(last_sig(&out), Some(Tok::Ident(_))) => {
                // Generic call arguments `f<T>(…)`: drop when the matching `>` is followed by `(`.
                let mut depth = 0;
                let mut j = i;
                let mut ok = false;
                while j < toks.len() {
                    match &toks[j] {
                        Tok::Punct(x) if x == "<" => depth += 1,
                        Tok::Punct(x) if x == ">" => {
                            depth -= 1;
                            if depth == 0 {
                                ok = next_sig(&toks, j + 1).is_some_and(|n| toks[n].is("("));
                                break;
                            }
                        }
                        Tok::Punct(x) if matches!(x.as_str(), ";" | "=" | "&&" | "||" | "(" | ")") => break,
                        _ => {}
                    }
                    j += 1;
                }
                if ok {
                    i = j + 1;
                    continue;
                }
            }
            Tok::Punct(p) if p == "(" => {
                in_decl = false;
                let params = is_param_list(&toks, &out, i);
                frames.push(Frame::Paren { params, ternaries: 0 });
            }
            Tok::Punct(p) if p == "{" || p == "[" => {
                // A declaration's name ends here (destructuring is not annotated).
                in_decl = false;
                frames.push(if p == "{" { Frame::Brace { ternaries: 0 } } else { Frame::Bracket { ternaries: 0 } });
            }
            Tok::Ident(w) if w == "of" || w == "in" => in_decl = false,
            Tok::Punct(p) if p == ")" => {
                in_decl = false;
                frames.pop();
                out.push(t.clone());
                i += 1;
                // Return type `): T =>` / `): T {`, unless a ternary is open.
                if let Some(n) = next_sig(&toks, i) {
                    let ternary_open = frames.last_mut().map(ternaries).is_some_and(|n| *n > 0);
                    if toks[n].is(":") && !ternary_open {
                        let after = skip_type(&toks, n + 1, true);
                        if next_sig(&toks, after).is_some_and(|m| toks[m].is("=>") || toks[m].is("{")) {
                            i = after;
                        }
                    }
                }
                continue;
            }
            Tok::Punct(p) if p == "}" || p == "]" => {
                frames.pop();
            }
            Tok::Punct(p) if p == "?" => {
                // Optional parameter/property `name?:` — drop the `?` with its type.
                if next_sig(&toks, i + 1).is_some_and(|n| toks[n].is(":"))
                    && (in_decl || matches!(frames.last(), Some(Frame::Paren { params: true, .. })))
                {
                    i += 1;
                    continue;
                }
                if let Some(f) = frames.last_mut() {
                    *ternaries(f) += 1;
                }
            }
            Tok::Punct(p) if p == ":" => {
                let f = frames.last_mut();
                let ternary = f.as_ref().is_some_and(|f| match f {
                    Frame::Paren { ternaries, .. } | Frame::Brace { ternaries } | Frame::Bracket { ternaries } => *ternaries > 0,
                });
                if ternary {
                    if let Some(f) = frames.last_mut() {
                        *ternaries(f) -= 1;
                    }
                } else if in_decl || matches!(frames.last(), Some(Frame::Paren { params: true, .. })) {
                    i = skip_type(&toks, i + 1, false);
                    continue;
                }
            }
            Tok::Punct(p) if p == "=" || p == ";" => in_decl = false,
            _ => {}
        }
        out.push(t.clone());
        i += 1;
    }
    Ok(out.iter().map(Tok::text).collect())
}

#[cfg(test)]
mod tests {
    use super::strip;

    fn norm(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn strips_imports_declarations_and_annotations() {
        let ts = r#"
import { workflow, node, trigger } from '@n8n/workflow-sdk';
import type { Foo } from "x";
interface Cfg { a: string; b?: number }
type Id = string | number;
const name: string = 'demo';
let n: Array<number> = [1, 2];
const f = (a: number, b?: string): number => a + 1;
function g(x: Record<string, unknown>): void { return; }
const t = ok ? 'a' : 'b';
const o = { key: 'v', other: n as unknown as number[] };
const y = obj!.field;
export default workflow('id', name);
"#;
        let js = strip(ts).unwrap();
        let n = norm(&js);
        assert!(!n.contains("import"), "{n}");
        assert!(!n.contains("interface") && !n.contains("type Id"), "{n}");
        assert!(n.contains("const name = 'demo';"), "{n}");
        assert!(n.contains("let n = [1, 2];"), "{n}");
        assert!(n.contains("const f = (a, b) => a + 1;"), "{n}");
        assert!(n.contains("function g(x) { return; }"), "{n}");
        assert!(n.contains("const t = ok ? 'a' : 'b';"), "{n}");
        assert!(n.contains("other: n }"), "{n}");
        assert!(n.contains("const y = obj.field;"), "{n}");
        assert!(n.contains("__exports.default = workflow('id', name);"), "{n}");
    }

    #[test]
    fn strips_what_generated_code_tends_to_use() {
        let ts = r#"
const list: Array<{ name: string; size?: number }> = [];
const m = new Map<string, number>();
const modes = ['a', 'b'] as const;
const pick = ({ a, b }: { a: string; b: number }, fallback?: string): string => a ?? fallback ?? `${b}: ok`;
const maybe = obj?.x ?? (flag ? 1 : 2);
function f<T>(x: T): T { return x; }
const g = async (x: number): Promise<void> => { await x; };
export const helper = (n: number) => n * 2;
"#;
        let n = norm(&strip(ts).unwrap());
        assert!(n.contains("const list = [];"), "{n}");
        assert!(n.contains("const m = new Map();"), "{n}");
        assert!(n.contains("const modes = ['a', 'b'];"), "{n}");
        assert!(n.contains("const pick = ({ a, b }, fallback) => a ?? fallback ?? `${b}: ok`;"), "{n}");
        assert!(n.contains("const maybe = obj?.x ?? (flag ? 1 : 2);"), "{n}");
        assert!(n.contains("const g = async (x) => { await x; };"), "{n}");
        assert!(n.contains("const helper = (n) => n * 2;"), "{n}");
    }

    #[test]
    fn plain_javascript_is_unchanged() {
        let js = "const a = { x: 1, y: [2, 3], s: `t${1 + 2}` };\nconst r = /a:b/g.test('a:b') ? 1 : 2;\nfoo(a, (v) => v * 2);\n";
        assert_eq!(strip(js).unwrap(), js);
    }
}
