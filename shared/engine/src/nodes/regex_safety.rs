//! Refuses user regular expressions that make a backtracking engine (n8n's
//! V8) take exponential or high-polynomial time, as n8n's Rename Keys does
//! since it validates patterns. Our regex engine is linear-time, so the
//! check exists to give the same answer n8n gives; it looks for the shapes
//! that backtrack: a repeated group that itself repeats (`(a+)+`), a
//! repeated alternation whose branches overlap (`(a|a)*`), and runs of
//! overlapping repetitions (`a*a*`, `aaaaa*`).

use regex_syntax::ast::{Ast, RepetitionKind, RepetitionRange};
use regex_syntax::hir::{Class, Hir, HirKind};

/// The first characters an expression can match, and whether it can match
/// the empty string.
struct First {
    ranges: Vec<(u32, u32)>,
    nullable: bool,
}

fn first(h: &Hir) -> First {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => First { ranges: vec![], nullable: true },
        HirKind::Literal(l) => {
            let c = std::str::from_utf8(&l.0).ok().and_then(|s| s.chars().next()).map_or(0, |c| c as u32);
            First { ranges: vec![(c, c)], nullable: false }
        }
        HirKind::Class(Class::Unicode(c)) => First { ranges: c.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(), nullable: false },
        HirKind::Class(Class::Bytes(c)) => First { ranges: c.ranges().iter().map(|r| (u32::from(r.start()), u32::from(r.end()))).collect(), nullable: false },
        HirKind::Repetition(r) => {
            let f = first(&r.sub);
            First { ranges: f.ranges, nullable: f.nullable || r.min == 0 }
        }
        HirKind::Capture(c) => first(&c.sub),
        HirKind::Concat(parts) => {
            let mut ranges = vec![];
            for p in parts {
                let f = first(p);
                ranges.extend(f.ranges);
                if !f.nullable {
                    return First { ranges, nullable: false };
                }
            }
            First { ranges, nullable: true }
        }
        HirKind::Alternation(alts) => {
            let mut out = First { ranges: vec![], nullable: false };
            for a in alts {
                let f = first(a);
                out.ranges.extend(f.ranges);
                out.nullable |= f.nullable;
            }
            out
        }
    }
}

/// The length of a literal made of one repeated character.
fn same_char_run(h: &Hir) -> Option<usize> {
    let HirKind::Literal(l) = h.kind() else { return None };
    let s = std::str::from_utf8(&l.0).ok()?;
    let c = s.chars().next()?;
    s.chars().all(|x| x == c).then(|| s.chars().count())
}

fn overlap(a: &[(u32, u32)], b: &[(u32, u32)]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.0 <= y.1 && y.0 <= x.1))
}

fn unbounded(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Repetition(r) if r.max.is_none())
}

/// Does `h` contain an unbounded repetition?
fn repeats(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Repetition(r) => r.max.is_none() || repeats(&r.sub),
        HirKind::Capture(c) => repeats(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(repeats),
        _ => false,
    }
}

fn strip(h: &Hir) -> &Hir {
    match h.kind() {
        HirKind::Capture(c) => strip(&c.sub),
        _ => h,
    }
}

fn risky(h: &Hir) -> bool {
    match h.kind() {
        HirKind::Repetition(r) => {
            if r.max.is_none() {
                if repeats(&r.sub) {
                    return true;
                }
                if let HirKind::Alternation(alts) = strip(&r.sub).kind() {
                    let firsts: Vec<First> = alts.iter().map(first).collect();
                    for (i, a) in firsts.iter().enumerate() {
                        if firsts[i + 1..].iter().any(|b| overlap(&a.ranges, &b.ranges)) {
                            return true;
                        }
                    }
                }
            }
            risky(&r.sub)
        }
        HirKind::Capture(c) => risky(&c.sub),
        HirKind::Alternation(v) => v.iter().any(risky),
        HirKind::Concat(parts) => {
            for (i, p) in parts.iter().enumerate() {
                if !unbounded(p) {
                    continue;
                }
                let f = first(p);
                // An earlier unbounded repetition, or a long run of atoms,
                // that can match the same characters right before this one.
                let mut run = 0;
                for q in parts[..i].iter().rev() {
                    let g = first(q);
                    if !overlap(&f.ranges, &g.ranges) {
                        break;
                    }
                    if unbounded(q) {
                        return true;
                    }
                    // Only a run of one repeated character counts (`aaaa` before `a*`).
                    let Some(n) = same_char_run(q) else { break };
                    run += n;
                    if run >= 4 {
                        return true;
                    }
                }
            }
            parts.iter().any(risky)
        }
        _ => false,
    }
}

fn hir(pattern: &str, case_insensitive: bool) -> Option<Hir> {
    regex_syntax::ParserBuilder::new().case_insensitive(case_insensitive).build().parse(pattern).ok()
}

/// A repeated alternation with overlapping branches, found on the syntax
/// tree (the HIR folds `a|a` into one class before we could see it).
fn overlapping_alternation(ast: &Ast, pattern: &str, ci: bool) -> bool {
    let inner = |a: &Ast| -> bool { overlapping_alternation(a, pattern, ci) };
    match ast {
        Ast::Repetition(r) => {
            let unbounded = matches!(
                r.op.kind,
                RepetitionKind::ZeroOrMore | RepetitionKind::OneOrMore | RepetitionKind::Range(RepetitionRange::AtLeast(_))
            );
            let mut body: &Ast = &r.ast;
            while let Ast::Group(g) = body {
                body = &g.ast;
            }
            if let (true, Ast::Alternation(alt)) = (unbounded, body) {
                let firsts: Vec<Vec<(u32, u32)>> = alt
                    .asts
                    .iter()
                    .map(|a| hir(&pattern[a.span().start.offset..a.span().end.offset], ci).map(|h| first(&h).ranges).unwrap_or_default())
                    .collect();
                if firsts.iter().enumerate().any(|(i, a)| firsts[i + 1..].iter().any(|b| overlap(a, b))) {
                    return true;
                }
            }
            inner(&r.ast)
        }
        Ast::Group(g) => inner(&g.ast),
        Ast::Alternation(a) => a.asts.iter().any(inner),
        Ast::Concat(c) => c.asts.iter().any(inner),
        _ => false,
    }
}

/// True when the pattern has a shape that backtracks catastrophically.
pub fn is_risky(pattern: &str, case_insensitive: bool) -> bool {
    let Some(h) = hir(pattern, case_insensitive) else { return false };
    risky(&h) || regex_syntax::ast::parse::Parser::new().parse(pattern).is_ok_and(|a| overlapping_alternation(&a, pattern, case_insensitive))
}

#[cfg(test)]
mod tests {
    use super::is_risky;

    #[test]
    fn flags_backtracking_shapes_only() {
        for bad in ["(a+)+b", "(a|a)*b", "aaaaaaaaa*c", "a*a*a*c", "(\\w+\\s?)*$", "(x+x+)+y"] {
            assert!(is_risky(bad, false), "{bad}");
        }
        for good in ["[N-n]ame", "^user_(\\d+)$", "(\\w+)_id", "a+b", "(ab|cd)*", "\\d\\d*", "foo.*bar", "hello.*"] {
            assert!(!is_risky(good, false), "{good}");
        }
    }
}
