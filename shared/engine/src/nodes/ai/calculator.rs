//! The Calculator tool's arithmetic: numbers, `+ - * / % ^` (and `**`),
//! parentheses, unary minus, `pi`/`e` and the usual functions, over f64.
//! A small recursive-descent parser: the model's input is never evaluated
//! as code.

/// Evaluates `input`; the error says what could not be read.
pub fn evaluate(input: &str) -> Result<f64, String> {
    let tokens = tokenize(input)?;
    let mut p = Parser { tokens, at: 0 };
    let v = p.expr()?;
    if p.at != p.tokens.len() {
        return Err(format!("Unexpected '{}' in expression", p.tokens[p.at].text()));
    }
    Ok(v)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(char),
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Num(n) => n.to_string(),
            Tok::Ident(s) => s.clone(),
            Tok::Op(c) => c.to_string(),
        }
    }
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit() || *d == '-' || *d == '+') {
                i += 2;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Tok::Num(text.parse().map_err(|_| format!("Invalid number '{text}'"))?));
        } else if c.is_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect::<String>().to_lowercase()));
        } else if c == '*' && chars.get(i + 1) == Some(&'*') {
            out.push(Tok::Op('^'));
            i += 2;
        } else if "+-*/%^(),".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("Unexpected character '{c}' in expression"));
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.at) {
            Some(Tok::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.peek_op() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("Expected '{c}'"))
        }
    }

    fn expr(&mut self) -> Result<f64, String> {
        let mut v = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.at += 1;
            let r = self.term()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.at += 1;
            let r = self.unary()?;
            v = match op {
                '*' => v * r,
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek_op() {
            Some('-') => {
                self.at += 1;
                Ok(-self.unary()?)
            }
            Some('+') => {
                self.at += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.atom()?;
        if self.peek_op() == Some('^') {
            self.at += 1;
            // right-associative, binds tighter than unary minus on its left
            let exp = self.unary()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<f64, String> {
        let tok = self.tokens.get(self.at).cloned().ok_or("Unexpected end of expression")?;
        self.at += 1;
        match tok {
            Tok::Num(n) => Ok(n),
            Tok::Op('(') => {
                let v = self.expr()?;
                self.expect(')')?;
                Ok(v)
            }
            Tok::Ident(name) => {
                match name.as_str() {
                    "pi" => return Ok(std::f64::consts::PI),
                    "e" => return Ok(std::f64::consts::E),
                    _ => {}
                }
                self.expect('(').map_err(|_| format!("Undefined symbol {name}"))?;
                let mut args = vec![self.expr()?];
                while self.peek_op() == Some(',') {
                    self.at += 1;
                    args.push(self.expr()?);
                }
                self.expect(')')?;
                call(&name, &args)
            }
            Tok::Op(c) => Err(format!("Unexpected '{c}' in expression")),
        }
    }
}

fn call(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| if args.len() == 1 { Ok(f(args[0])) } else { Err(format!("{name} takes one argument")) };
    match name {
        "sqrt" => one(f64::sqrt),
        "cbrt" => one(f64::cbrt),
        "abs" => one(f64::abs),
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "asin" => one(f64::asin),
        "acos" => one(f64::acos),
        "atan" => one(f64::atan),
        "exp" => one(f64::exp),
        "ln" => one(f64::ln),
        "log" if args.len() == 2 => Ok(args[0].ln() / args[1].ln()),
        "log" => one(f64::ln),
        "log10" => one(f64::log10),
        "log2" => one(f64::log2),
        "floor" => one(f64::floor),
        "ceil" => one(f64::ceil),
        "round" => one(f64::round),
        "pow" if args.len() == 2 => Ok(args[0].powf(args[1])),
        "min" => Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
        "max" => Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        _ => Err(format!("Undefined function {name}")),
    }
}

/// The result as mathjs prints a number: integers without a fraction.
pub fn format(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e21 {
        format!("{}", v as i128)
    } else if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        let s = format!("{:.14}", v);
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_functions_and_errors() {
        assert_eq!(evaluate("2 + 3 * 4").unwrap(), 14.0);
        assert_eq!(evaluate("(2 + 3) * 4").unwrap(), 20.0);
        assert_eq!(evaluate("2 ^ 3 ^ 2").unwrap(), 512.0);
        assert_eq!(evaluate("-2 ^ 2").unwrap(), -4.0);
        assert_eq!(evaluate("2 ** 10").unwrap(), 1024.0);
        assert_eq!(evaluate("sqrt(16) + max(1, 7, 3)").unwrap(), 11.0);
        assert_eq!(format(evaluate("10 / 4").unwrap()), "2.5");
        assert_eq!(format(evaluate("1e3 % 7").unwrap()), "6");
        assert!((evaluate("2 * pi").unwrap() - std::f64::consts::TAU).abs() < 1e-12);
        assert!(evaluate("2 +").unwrap_err().contains("end of expression"));
        assert!(evaluate("process.exit()").is_err());
        assert!(evaluate("require('fs')").unwrap_err().contains("Unexpected character"));
        assert!(evaluate("foo(1)").unwrap_err().contains("Undefined function foo"));
    }
}
