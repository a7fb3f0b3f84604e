//! Native fast path for the simple expressions that dominate real workflows
//! (`$json.a.b * 2`, `$json["x"] > 3 && $json.y`, string concatenation).
//!
//! The parser accepts only a small JavaScript subset and the evaluator follows
//! the ECMAScript rules for it. Whenever a construct or a runtime situation
//! falls outside what is modelled exactly (method calls, objects in arithmetic,
//! prototype lookups, errors), it reports [`Bail`] and the caller evaluates the
//! expression in QuickJS instead, so results are always the JavaScript ones.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

use crate::DataProxy;

/// "Not handled here: ask QuickJS."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Json,
    ItemIndex,
    RunIndex,
    Chain(Box<Expr>, Vec<Step>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    optional: bool,
    key: Key,
}

#[derive(Debug, Clone, PartialEq)]
enum Key {
    Name(String),
    Computed(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Neg,
    Plus,
    TypeOf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    StrictEq,
    StrictNe,
    And,
    Or,
    Nullish,
}

// ---------------------------------------------------------------- lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "===", "!==", "?.", "??", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", ".", "?",
    ":", "+", "-", "*", "/", "%", "<", ">", "!",
];

fn lex(src: &str) -> Result<Vec<Tok>, Bail> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (n, len) = lex_number(&src[i..])?;
            out.push(Tok::Num(n));
            i += len;
            // `1.toFixed`, `1a`: identifier directly after a number is a JS syntax error
            if b.get(i).is_some_and(|d| d.is_ascii_alphanumeric() || *d == b'_' || *d == b'$') {
                return Err(Bail);
            }
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (s, len) = lex_string(&src[i..])?;
            out.push(Tok::Str(s));
            i += len;
            continue;
        }
        if c == b'`' {
            // only plain template literals without substitutions or escapes
            let rest = &src[i + 1..];
            let end = rest.find('`').ok_or(Bail)?;
            let body = &rest[..end];
            if body.contains("${") || body.contains('\\') || body.contains('\r') {
                return Err(Bail);
            }
            out.push(Tok::Str(body.to_string()));
            i += end + 2;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            if i < b.len() && b[i] >= 0x80 {
                return Err(Bail); // unicode identifiers: leave to QuickJS
            }
            out.push(Tok::Ident(src[start..i].to_string()));
            continue;
        }
        let rest = &src[i..];
        let p = PUNCTS.iter().find(|p| rest.starts_with(**p)).ok_or(Bail)?;
        // `?.5` is a conditional followed by a number, not optional chaining
        if *p == "?." && b.get(i + 2).is_some_and(|d| d.is_ascii_digit()) {
            out.push(Tok::Punct("?"));
            i += 1;
            continue;
        }
        // `/` could start a regex or a comment: not worth modelling
        if *p == "/" && (rest.starts_with("//") || rest.starts_with("/*")) {
            return Err(Bail);
        }
        // `**`, `++`, `--`, `=`, `=>` and friends are outside the subset
        if matches!(*p, "*" | "+" | "-" | "<" | ">" | "&&" | "||" | "??")
            && b.get(i + p.len()).is_some_and(|d| *d == b'=' || (p.len() == 1 && *d == b[i]))
        {
            return Err(Bail);
        }
        if *p == "!" && b.get(i + 1) == Some(&b'=') {
            return Err(Bail);
        }
        out.push(Tok::Punct(p));
        i += p.len();
    }
    Ok(out)
}

fn lex_number(s: &str) -> Result<(f64, usize), Bail> {
    let b = s.as_bytes();
    if b.len() > 1 && b[0] == b'0' && (b[1] == b'x' || b[1] == b'X') {
        let mut i = 2;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i == 2 || i - 2 > 13 {
            return Err(Bail);
        }
        let n = u64::from_str_radix(&s[2..i], 16).map_err(|_| Bail)?;
        return Ok((n as f64, i));
    }
    if b.len() > 1 && b[0] == b'0' && b[1].is_ascii_alphanumeric() && b[1] != b'e' && b[1] != b'E' {
        return Err(Bail); // legacy octal, 0b, 0o, separators
    }
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == digits {
            return Err(Bail);
        }
        i = j;
    }
    if i < b.len() && (b[i] == b'_' || b[i] == b'n') {
        return Err(Bail); // separators and BigInt literals
    }
    let n: f64 = s[..i].parse().map_err(|_| Bail)?;
    Ok((n, i))
}

fn lex_string(s: &str) -> Result<(String, usize), Bail> {
    let mut chars = s.char_indices();
    let quote = chars.next().map(|(_, c)| c).ok_or(Bail)?;
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, i + 1)),
            '\n' | '\r' => return Err(Bail),
            '\\' => {
                let (_, e) = chars.next().ok_or(Bail)?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '\'' | '"' | '\\' | '/' => out.push(e),
                    '0' if !chars.clone().next().is_some_and(|(_, d)| d.is_ascii_digit()) => {
                        out.push('\0')
                    }
                    // \x, \u, octal, line continuations: QuickJS knows them all
                    _ => return Err(Bail),
                }
            }
            c => out.push(c),
        }
    }
    Err(Bail)
}

// ---------------------------------------------------------------- parser

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

/// Parses one code chunk (the text between `{{` and `}}`).
pub fn parse(code: &str) -> Result<Expr, Bail> {
    let code = code.trim().trim_end_matches(';').trim_end();
    if code.is_empty() {
        return Err(Bail);
    }
    let toks = lex(code)?;
    let mut p = Parser { toks, pos: 0 };
    let e = p.conditional()?;
    if p.pos != p.toks.len() {
        return Err(Bail);
    }
    Ok(e)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: &str) -> Result<(), Bail> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(Bail)
        }
    }

    fn conditional(&mut self) -> Result<Expr, Bail> {
        let c = self.nullish()?;
        if self.eat("?") {
            let a = self.conditional()?;
            self.expect(":")?;
            let b = self.conditional()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn nullish(&mut self) -> Result<Expr, Bail> {
        let start = self.pos;
        let first = self.or()?;
        if !matches!(self.peek(), Some(Tok::Punct("??"))) {
            return Ok(first);
        }
        // JS rejects `a || b ?? c` without parentheses; keep that a QuickJS matter
        let mixes = |p: &Parser, from: usize, to: usize| {
            let mut depth = 0i32;
            p.toks[from..to].iter().any(|t| match t {
                Tok::Punct("(") | Tok::Punct("[") => {
                    depth += 1;
                    false
                }
                Tok::Punct(")") | Tok::Punct("]") => {
                    depth -= 1;
                    false
                }
                Tok::Punct("&&") | Tok::Punct("||") => depth == 0,
                _ => false,
            })
        };
        if mixes(self, start, self.pos) {
            return Err(Bail);
        }
        let mut e = first;
        while self.eat("??") {
            let s = self.pos;
            let r = self.or()?;
            if mixes(self, s, self.pos) {
                return Err(Bail);
            }
            e = Expr::Binary(BinOp::Nullish, Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    fn or(&mut self) -> Result<Expr, Bail> {
        let mut e = self.and()?;
        while self.eat("||") {
            let r = self.and()?;
            e = Expr::Binary(BinOp::Or, Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, Bail> {
        let mut e = self.equality()?;
        while self.eat("&&") {
            let r = self.equality()?;
            e = Expr::Binary(BinOp::And, Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    fn equality(&mut self) -> Result<Expr, Bail> {
        let mut e = self.relational()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("===")) => BinOp::StrictEq,
                Some(Tok::Punct("!==")) => BinOp::StrictNe,
                Some(Tok::Punct("==")) => BinOp::Eq,
                Some(Tok::Punct("!=")) => BinOp::Ne,
                _ => return Ok(e),
            };
            self.pos += 1;
            let r = self.relational()?;
            e = Expr::Binary(op, Box::new(e), Box::new(r));
        }
    }

    fn relational(&mut self) -> Result<Expr, Bail> {
        let mut e = self.additive()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("<")) => BinOp::Lt,
                Some(Tok::Punct(">")) => BinOp::Gt,
                Some(Tok::Punct("<=")) => BinOp::Le,
                Some(Tok::Punct(">=")) => BinOp::Ge,
                _ => return Ok(e),
            };
            self.pos += 1;
            let r = self.additive()?;
            e = Expr::Binary(op, Box::new(e), Box::new(r));
        }
    }

    fn additive(&mut self) -> Result<Expr, Bail> {
        let mut e = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("+")) => BinOp::Add,
                Some(Tok::Punct("-")) => BinOp::Sub,
                _ => return Ok(e),
            };
            self.pos += 1;
            let r = self.multiplicative()?;
            e = Expr::Binary(op, Box::new(e), Box::new(r));
        }
    }

    fn multiplicative(&mut self) -> Result<Expr, Bail> {
        let mut e = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct("*")) => BinOp::Mul,
                Some(Tok::Punct("/")) => BinOp::Div,
                Some(Tok::Punct("%")) => BinOp::Rem,
                _ => return Ok(e),
            };
            self.pos += 1;
            let r = self.unary()?;
            e = Expr::Binary(op, Box::new(e), Box::new(r));
        }
    }

    fn unary(&mut self) -> Result<Expr, Bail> {
        let op = match self.peek() {
            Some(Tok::Punct("!")) => UnOp::Not,
            Some(Tok::Punct("-")) => UnOp::Neg,
            Some(Tok::Punct("+")) => UnOp::Plus,
            Some(Tok::Ident(s)) if s == "typeof" => UnOp::TypeOf,
            _ => return self.postfix(),
        };
        self.pos += 1;
        let e = self.unary()?;
        Ok(Expr::Unary(op, Box::new(e)))
    }

    fn postfix(&mut self) -> Result<Expr, Bail> {
        let base = self.primary()?;
        let mut steps = Vec::new();
        loop {
            match self.peek() {
                Some(Tok::Punct(".")) => {
                    self.pos += 1;
                    steps.push(Step { optional: false, key: Key::Name(self.ident()?) });
                }
                Some(Tok::Punct("?.")) => {
                    self.pos += 1;
                    if self.eat("[") {
                        let k = self.conditional()?;
                        self.expect("]")?;
                        steps.push(Step { optional: true, key: Key::Computed(k) });
                    } else if matches!(self.peek(), Some(Tok::Punct("("))) {
                        return Err(Bail);
                    } else {
                        steps.push(Step { optional: true, key: Key::Name(self.ident()?) });
                    }
                }
                Some(Tok::Punct("[")) => {
                    self.pos += 1;
                    let k = self.conditional()?;
                    self.expect("]")?;
                    steps.push(Step { optional: false, key: Key::Computed(k) });
                }
                Some(Tok::Punct("(")) => return Err(Bail), // calls go to QuickJS
                _ => break,
            }
        }
        if steps.is_empty() {
            Ok(base)
        } else {
            Ok(Expr::Chain(Box::new(base), steps))
        }
    }

    fn ident(&mut self) -> Result<String, Bail> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => Err(Bail),
        }
    }

    fn primary(&mut self) -> Result<Expr, Bail> {
        let t = self.peek().cloned().ok_or(Bail)?;
        self.pos += 1;
        Ok(match t {
            Tok::Num(n) => Expr::Num(n),
            Tok::Str(s) => Expr::Str(s),
            Tok::Ident(id) => match id.as_str() {
                "true" => Expr::Bool(true),
                "false" => Expr::Bool(false),
                "null" => Expr::Null,
                "undefined" => Expr::Undefined,
                "NaN" => Expr::Num(f64::NAN),
                "Infinity" => Expr::Num(f64::INFINITY),
                "$json" => Expr::Json,
                "$itemIndex" => Expr::ItemIndex,
                "$runIndex" => Expr::RunIndex,
                _ => return Err(Bail),
            },
            Tok::Punct("(") => {
                let e = self.conditional()?;
                self.expect(")")?;
                // parenthesised chains stop optional short-circuiting: keep them apart
                e
            }
            Tok::Punct(_) => return Err(Bail),
        })
    }
}

// ---------------------------------------------------------------- evaluation

/// A JavaScript value as seen by the fast path. Objects and arrays stay
/// references into the item data.
#[derive(Debug, Clone)]
pub enum V<'a> {
    Undef,
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, str>),
    Obj(&'a Value),
}

fn from_json(v: &Value) -> V<'_> {
    match v {
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => V::Num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => V::Str(Cow::Borrowed(s.as_str())),
        Value::Array(_) | Value::Object(_) => V::Obj(v),
    }
}

/// Names found on `Object.prototype` in the sandbox (natives plus n8n
/// extensions): a missing own key with such a name is not `undefined` in JS.
/// `None`: not known (no sandbox to ask), so every missing key bails.
pub struct ProtoNames(pub Option<std::collections::HashSet<String>>);

impl ProtoNames {
    fn may_inherit(&self, key: &str) -> bool {
        key == "__proto__" || self.0.as_ref().is_none_or(|names| names.contains(key))
    }
}

pub fn eval<'a>(
    e: &'a Expr,
    data: &'a dyn DataProxy,
    proto: &ProtoNames,
) -> Result<V<'a>, Bail> {
    Ok(match e {
        Expr::Undefined => V::Undef,
        Expr::Null => V::Null,
        Expr::Bool(b) => V::Bool(*b),
        Expr::Num(n) => V::Num(*n),
        Expr::Str(s) => V::Str(Cow::Borrowed(s.as_str())),
        Expr::Json => current_json(data),
        Expr::ItemIndex => V::Num(data.item_index() as f64),
        Expr::RunIndex => V::Num(data.run_index() as f64),
        Expr::Chain(base, steps) => {
            let mut cur = eval(base, data, proto)?;
            for st in steps {
                if st.optional && matches!(cur, V::Undef | V::Null) {
                    return Ok(V::Undef);
                }
                let key: Cow<'a, str> = match &st.key {
                    Key::Name(n) => Cow::Borrowed(n.as_str()),
                    Key::Computed(k) => match eval(k, data, proto)? {
                        V::Str(s) => s,
                        V::Obj(_) => return Err(Bail),
                        other => Cow::Owned(to_str(&other)?.into_owned()),
                    },
                };
                cur = member(cur, &key, proto)?;
            }
            cur
        }
        Expr::Unary(op, x) => {
            let v = eval(x, data, proto)?;
            match op {
                UnOp::Not => V::Bool(!truthy(&v)),
                UnOp::Neg => V::Num(-to_num(&v)?),
                UnOp::Plus => V::Num(to_num(&v)?),
                UnOp::TypeOf => V::Str(Cow::Borrowed(match v {
                    V::Undef => "undefined",
                    V::Null | V::Obj(_) => "object",
                    V::Bool(_) => "boolean",
                    V::Num(_) => "number",
                    V::Str(_) => "string",
                })),
            }
        }
        Expr::Cond(c, a, b) => {
            if truthy(&eval(c, data, proto)?) {
                eval(a, data, proto)?
            } else {
                eval(b, data, proto)?
            }
        }
        Expr::Binary(op, l, r) => {
            let a = eval(l, data, proto)?;
            match op {
                BinOp::And => return if truthy(&a) { eval(r, data, proto) } else { Ok(a) },
                BinOp::Or => return if truthy(&a) { Ok(a) } else { eval(r, data, proto) },
                BinOp::Nullish => {
                    return if matches!(a, V::Undef | V::Null) { eval(r, data, proto) } else { Ok(a) }
                }
                _ => {}
            }
            let b = eval(r, data, proto)?;
            binary(*op, a, b)?
        }
    })
}

fn current_json(data: &dyn DataProxy) -> V<'_> {
    let idx = data.item_index();
    if idx < 0 {
        return V::Undef;
    }
    match data.input_items().get(idx as usize) {
        Some(item) => from_json(&item.json),
        None => V::Undef,
    }
}

fn array_index(key: &str) -> Option<usize> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    if !b.iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    if n >= u32::MAX as u64 {
        return None;
    }
    Some(n as usize)
}

fn member<'a>(obj: V<'a>, key: &str, proto: &ProtoNames) -> Result<V<'a>, Bail> {
    match obj {
        V::Obj(Value::Object(m)) => match m.get(key) {
            Some(v) => Ok(from_json(v)),
            None if proto.may_inherit(key) => Err(Bail),
            None => Ok(V::Undef),
        },
        V::Obj(Value::Array(a)) => {
            if key == "length" {
                return Ok(V::Num(a.len() as f64));
            }
            match array_index(key) {
                Some(i) => Ok(a.get(i).map(from_json).unwrap_or(V::Undef)),
                None => Err(Bail),
            }
        }
        V::Str(s) => {
            if key == "length" {
                return Ok(V::Num(s.encode_utf16().count() as f64));
            }
            match array_index(key) {
                Some(i) if s.is_ascii() => Ok(match s.as_bytes().get(i) {
                    Some(c) => V::Str(Cow::Owned((*c as char).to_string())),
                    None => V::Undef,
                }),
                _ => Err(Bail),
            }
        }
        // TypeErrors and primitive prototypes: QuickJS produces the exact result
        _ => Err(Bail),
    }
}

pub fn truthy(v: &V) -> bool {
    match v {
        V::Undef | V::Null => false,
        V::Bool(b) => *b,
        V::Num(n) => !(*n == 0.0 || n.is_nan()),
        V::Str(s) => !s.is_empty(),
        V::Obj(_) => true,
    }
}

fn to_num(v: &V) -> Result<f64, Bail> {
    Ok(match v {
        V::Undef => f64::NAN,
        V::Null => 0.0,
        V::Bool(b) => {
            if *b {
                1.0
            } else {
                0.0
            }
        }
        V::Num(n) => *n,
        V::Str(s) => str_to_num(s),
        V::Obj(_) => return Err(Bail),
    })
}

fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// ECMAScript StringToNumber.
pub fn str_to_num(s: &str) -> f64 {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return 0.0;
    }
    let radix = |p: &str, r: u32| -> f64 {
        if p.is_empty() || !p.chars().all(|c| c.is_digit(r)) {
            return f64::NAN;
        }
        p.chars().fold(0.0, |acc, c| acc * r as f64 + c.to_digit(r).unwrap_or(0) as f64)
    };
    if let Some(p) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return radix(p, 16);
    }
    if let Some(p) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        return radix(p, 8);
    }
    if let Some(p) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        return radix(p, 2);
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'+' => (1.0, &t[1..]),
        b'-' => (-1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    // Rust also accepts "inf"/"nan"; JS only digits, '.', exponent
    if body.is_empty()
        || !body.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        || !body.bytes().next().is_some_and(|c| c.is_ascii_digit() || c == b'.')
    {
        return f64::NAN;
    }
    match body.parse::<f64>() {
        Ok(n) => sign * n,
        Err(_) => f64::NAN,
    }
}

/// ECMAScript Number::toString (radix 10).
pub fn num_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x < 0.0 {
        return format!("-{}", num_to_string(-x));
    }
    // `{:e}` gives the shortest round-trip digits, as JS requires
    let sci = format!("{x:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    if k <= n && n <= 21 {
        let mut s = digits;
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
        s
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{}", "0".repeat((-n) as usize), digits)
    } else {
        let e = n - 1;
        let sign = if e >= 0 { "+" } else { "-" };
        if k == 1 {
            format!("{digits}e{sign}{}", e.abs())
        } else {
            format!("{}.{}e{sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    }
}

fn to_str<'a>(v: &V<'a>) -> Result<Cow<'a, str>, Bail> {
    Ok(match v {
        V::Undef => Cow::Borrowed("undefined"),
        V::Null => Cow::Borrowed("null"),
        V::Bool(true) => Cow::Borrowed("true"),
        V::Bool(false) => Cow::Borrowed("false"),
        V::Num(n) => Cow::Owned(num_to_string(*n)),
        V::Str(s) => s.clone(),
        V::Obj(_) => return Err(Bail),
    })
}

fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn strict_eq(a: &V, b: &V) -> bool {
    match (a, b) {
        (V::Undef, V::Undef) | (V::Null, V::Null) => true,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::Num(x), V::Num(y)) => x == y,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Obj(x), V::Obj(y)) => std::ptr::eq(*x, *y),
        _ => false,
    }
}

fn loose_eq(a: &V, b: &V) -> Result<bool, Bail> {
    Ok(match (a, b) {
        (V::Undef | V::Null, V::Undef | V::Null) => true,
        (V::Undef | V::Null, _) | (_, V::Undef | V::Null) => false,
        (V::Obj(_), V::Obj(_)) => strict_eq(a, b),
        (V::Obj(_), _) | (_, V::Obj(_)) => return Err(Bail),
        (V::Num(x), V::Str(s)) | (V::Str(s), V::Num(x)) => *x == str_to_num(s),
        (V::Bool(_), _) => loose_eq(&V::Num(to_num(a)?), b)?,
        (_, V::Bool(_)) => loose_eq(a, &V::Num(to_num(b)?))?,
        _ => strict_eq(a, b),
    })
}

fn binary<'a>(op: BinOp, a: V<'a>, b: V<'a>) -> Result<V<'a>, Bail> {
    Ok(match op {
        BinOp::Add => {
            if matches!(a, V::Obj(_)) || matches!(b, V::Obj(_)) {
                return Err(Bail);
            }
            if matches!(a, V::Str(_)) || matches!(b, V::Str(_)) {
                let mut s = to_str(&a)?.into_owned();
                s.push_str(&to_str(&b)?);
                V::Str(Cow::Owned(s))
            } else {
                V::Num(to_num(&a)? + to_num(&b)?)
            }
        }
        BinOp::Sub => V::Num(to_num(&a)? - to_num(&b)?),
        BinOp::Mul => V::Num(to_num(&a)? * to_num(&b)?),
        BinOp::Div => V::Num(to_num(&a)? / to_num(&b)?),
        BinOp::Rem => V::Num(to_num(&a)? % to_num(&b)?),
        BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
            use std::cmp::Ordering::*;
            if let (V::Str(x), V::Str(y)) = (&a, &b) {
                let o = utf16_cmp(x, y);
                V::Bool(match op {
                    BinOp::Lt => o == Less,
                    BinOp::Gt => o == Greater,
                    BinOp::Le => o != Greater,
                    _ => o != Less,
                })
            } else {
                let (x, y) = (to_num(&a)?, to_num(&b)?);
                V::Bool(match op {
                    BinOp::Lt => x < y,
                    BinOp::Gt => x > y,
                    BinOp::Le => x <= y,
                    _ => x >= y,
                })
            }
        }
        BinOp::StrictEq => V::Bool(strict_eq(&a, &b)),
        BinOp::StrictNe => V::Bool(!strict_eq(&a, &b)),
        BinOp::Eq => V::Bool(loose_eq(&a, &b)?),
        BinOp::Ne => V::Bool(!loose_eq(&a, &b)?),
        BinOp::And | BinOp::Or | BinOp::Nullish => return Err(Bail),
    })
}

// ---------------------------------------------------------------- results

/// A JS number as the JSON value QuickJS results are converted to: integral
/// values become JSON integers, NaN and infinities become null.
pub fn num_to_json(n: f64) -> Value {
    if !n.is_finite() {
        return Value::Null;
    }
    if n.fract() == 0.0 {
        if n.abs() < 9.0e18 {
            return Value::Number(Number::from(n as i64));
        }
        if n > 0.0 && n < 1.8e19 {
            return Value::Number(Number::from(n as u64));
        }
    }
    Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
}

/// Nesting the fast path copies; deeper data is left to the sandbox, whose
/// conversion refuses it clearly (this copy recurses once per level too).
const MAX_DEPTH: usize = 256;

/// Copies item data the way a round trip through a JS object would: numbers
/// normalised, integer-like keys first in ascending order.
pub fn normalize(v: &Value) -> Result<Value, Bail> {
    normalize_at(v, 0)
}

fn normalize_at(v: &Value, depth: usize) -> Result<Value, Bail> {
    Ok(match v {
        Value::Number(n) => num_to_json(n.as_f64().unwrap_or(f64::NAN)),
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => return Err(Bail),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize_at(x, depth + 1)).collect::<Result<_, _>>()?),
        Value::Object(m) => {
            let mut out = Map::with_capacity(m.len());
            let mut idx: Vec<(usize, &String)> =
                m.keys().filter_map(|k| array_index(k).map(|i| (i, k))).collect();
            if !idx.is_empty() {
                idx.sort();
                for (_, k) in &idx {
                    if let Some(x) = m.get(*k) {
                        out.insert((*k).clone(), normalize_at(x, depth + 1)?);
                    }
                }
            }
            for (k, x) in m {
                if idx.is_empty() || array_index(k).is_none() {
                    out.insert(k.clone(), normalize_at(x, depth + 1)?);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

pub fn to_value(v: V) -> Result<Value, Bail> {
    Ok(match v {
        V::Undef | V::Null => Value::Null,
        V::Bool(b) => Value::Bool(b),
        V::Num(n) => num_to_json(n),
        V::Str(s) => Value::String(s.into_owned()),
        V::Obj(o) => return normalize(o),
    })
}

/// The string a template part contributes: `v || v === 0 || v === false ? v : ''`
/// then `Array.prototype.join` (null/undefined become empty).
pub fn template_part(v: &V) -> Result<String, Bail> {
    let keep = truthy(v) || matches!(v, V::Num(n) if *n == 0.0) || matches!(v, V::Bool(false));
    if !keep {
        return Ok(String::new());
    }
    Ok(to_str(v)?.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formatting_matches_js() {
        let cases = [
            (1.0, "1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (-2.5, "-2.5"),
            (1.5e-10, "1.5e-10"),
            (100.0, "100"),
        ];
        for (x, s) in cases {
            assert_eq!(num_to_string(x), s, "{x}");
        }
    }

    #[test]
    fn string_to_number() {
        assert_eq!(str_to_num(" 12 "), 12.0);
        assert_eq!(str_to_num(""), 0.0);
        assert!(str_to_num("inf").is_nan());
        assert_eq!(str_to_num("0x10"), 16.0);
        assert_eq!(str_to_num("-Infinity"), f64::NEG_INFINITY);
        assert!(str_to_num("1,5").is_nan());
    }

    #[test]
    fn parses_subset_only() {
        assert!(parse("$json.score * 2").is_ok());
        assert!(parse("$json[\"a\"]?.b ?? 0").is_ok());
        assert!(parse("$json.a.toUpperCase()").is_err());
        assert!(parse("$json.a || $json.b ?? 1").is_err());
        assert!(parse("a = 1").is_err());
        assert!(parse("2 ** 3").is_err());
    }
}
