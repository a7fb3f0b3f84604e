//! Dates as n8n's Date & Time node computes them: a Luxon-like `Dt` (an
//! instant plus a zone) with Luxon's parsing, formatting, calendar
//! arithmetic, `startOf` and `diff`; moment.js formatting and parsing for
//! version 1; and JavaScript's `Date` parser (V8's legacy forms) where n8n
//! falls back to it. The process zone of `new Date(...)` is UTC, as on Lambda.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike, Utc};
use serde_json::{json, Map, Value};

/// A Luxon zone.
#[derive(Debug, Clone, PartialEq)]
pub enum Zone {
    /// Luxon's `FixedOffsetZone.utcInstance` ("UTC"): ISO output ends in `Z`.
    Utc,
    /// A fixed offset in minutes (`UTC+3`).
    Fixed(i32),
    /// An IANA zone (`Etc/UTC` is one: ISO output ends in `+00:00`).
    Iana(expression::tz::Tz),
}

impl Zone {
    /// Luxon's `normalizeZone` for a zone name; `None` for an unknown zone.
    pub fn parse(name: &str) -> Option<Zone> {
        let lower = name.trim().to_ascii_lowercase();
        if lower == "utc" || lower == "gmt" || lower == "z" {
            return Some(Zone::Utc);
        }
        if let Some(rest) = lower.strip_prefix("utc") {
            if let Some(m) = parse_offset(rest) {
                return Some(if m == 0 { Zone::Utc } else { Zone::Fixed(m) });
            }
        }
        let name = name.trim();
        expression::tz::Tz::get(name).map(Zone::Iana)
    }

    /// The offset from UTC in minutes at an instant.
    pub fn offset_at(&self, ms: i64) -> i32 {
        match self {
            Zone::Utc => 0,
            Zone::Fixed(m) => *m,
            Zone::Iana(tz) => {
                let utc = Utc.timestamp_millis_opt(ms).single().unwrap_or_default();
                tz.offset_from_utc_datetime(&utc.naive_utc()).fix().local_minus_utc() / 60
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Zone::Utc => "UTC".into(),
            Zone::Fixed(m) => {
                if m % 60 == 0 {
                    format!("UTC{}{}", if *m < 0 { '-' } else { '+' }, m.abs() / 60)
                } else {
                    format!("UTC{}", offset_text(*m, true))
                }
            }
            Zone::Iana(tz) => tz.name().to_string(),
        }
    }

    fn fixed_zero(&self) -> bool {
        matches!(self, Zone::Utc) || matches!(self, Zone::Fixed(0))
    }
}

/// `+05`, `+0530`, `+05:30`, `-3` → minutes.
fn parse_offset(s: &str) -> Option<i32> {
    let s = s.trim();
    let (sign, rest) = match s.chars().next()? {
        '+' => (1, &s[1..]),
        '-' => (-1, &s[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 4 {
        return None;
    }
    let (h, m) = if digits.len() <= 2 { (digits.parse::<i32>().ok()?, 0) } else { (digits[..digits.len() - 2].parse::<i32>().ok()?, digits[digits.len() - 2..].parse::<i32>().ok()?) };
    (h <= 23 && m <= 59).then_some(sign * (h * 60 + m))
}

fn offset_text(minutes: i32, colon: bool) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let (h, m) = (minutes.abs() / 60, minutes.abs() % 60);
    if colon {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}{m:02}")
    }
}

/// An instant in a zone.
#[derive(Debug, Clone, PartialEq)]
pub struct Dt {
    pub ms: i64,
    pub zone: Zone,
}

/// Wall-clock fields.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub ms: u32,
}

const DAY_MS: i64 = 86_400_000;

fn days_in_month(year: i32, month: u32) -> u32 {
    let (y, m) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    NaiveDate::from_ymd_opt(y, m, 1).and_then(|d| d.pred_opt()).map_or(31, |d| d.day())
}

/// `Date.UTC(y, m-1, d, h, mi, s, ms)` (overflowing fields roll over).
fn local_ts(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64, ms: i64) -> i64 {
    let y = year + (month - 1).div_euclid(12);
    let m = (month - 1).rem_euclid(12) + 1;
    let first = NaiveDate::from_ymd_opt(y as i32, m as u32, 1).unwrap_or_default();
    let days = first.signed_duration_since(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()).num_days() + day - 1;
    days * DAY_MS + hour * 3_600_000 + minute * 60_000 + second * 1000 + ms
}

impl Dt {
    pub fn new(ms: i64, zone: Zone) -> Dt {
        Dt { ms, zone }
    }

    pub fn now(zone: Zone) -> Dt {
        Dt { ms: Utc::now().timestamp_millis(), zone }
    }

    pub fn offset(&self) -> i32 {
        self.zone.offset_at(self.ms)
    }

    fn naive(&self) -> NaiveDateTime {
        let local = self.ms + i64::from(self.offset()) * 60_000;
        Utc.timestamp_millis_opt(local).single().unwrap_or_default().naive_utc()
    }

    pub fn fields(&self) -> Fields {
        let n = self.naive();
        Fields { year: n.year(), month: n.month(), day: n.day(), hour: n.hour(), minute: n.minute(), second: n.second(), ms: n.and_utc().timestamp_subsec_millis() }
    }

    pub fn set_zone(&self, zone: Zone) -> Dt {
        Dt { ms: self.ms, zone }
    }

    /// The instant of a wall-clock time in `zone`, with Luxon's `fixOffset`
    /// (a time in a DST gap moves forward; an ambiguous one takes `guess`'s side).
    pub fn from_local(local: i64, zone: &Zone, guess_offset: Option<i32>) -> Dt {
        let o = guess_offset.unwrap_or_else(|| zone.offset_at(local));
        let mut utc = local - i64::from(o) * 60_000;
        let o2 = zone.offset_at(utc);
        if o != o2 {
            utc -= i64::from(o2 - o) * 60_000;
            let o3 = zone.offset_at(utc);
            if o2 != o3 {
                utc = local - i64::from(o2.min(o3)) * 60_000;
            }
        }
        Dt { ms: utc, zone: zone.clone() }
    }

    pub fn from_fields(f: Fields, zone: &Zone) -> Dt {
        let local = local_ts(i64::from(f.year), i64::from(f.month), i64::from(f.day), i64::from(f.hour), i64::from(f.minute), i64::from(f.second), i64::from(f.ms));
        Dt::from_local(local, zone, None)
    }

    pub fn weekday(&self) -> u32 {
        self.naive().weekday().number_from_monday()
    }

    pub fn ordinal(&self) -> u32 {
        self.naive().ordinal()
    }

    pub fn iso_week(&self) -> (i32, u32) {
        let w = self.naive().iso_week();
        (w.year(), w.week())
    }

    pub fn quarter(&self) -> u32 {
        (self.fields().month - 1) / 3 + 1
    }

    /// Luxon `toISO()`.
    pub fn to_iso(&self) -> String {
        let f = self.fields();
        let o = self.offset();
        let off = if self.zone.fixed_zero() { "Z".to_string() } else { offset_text(o, true) };
        format!("{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{off}", pad_year(f.year), f.month, f.day, f.hour, f.minute, f.second, f.ms)
    }

    /// `Date.prototype.toISOString()` (always UTC).
    pub fn to_iso_utc(&self) -> String {
        self.set_zone(Zone::Utc).to_iso()
    }

    /// Luxon `plus({unit: amount})` (calendar units in wall-clock time,
    /// fractions and clock units as elapsed milliseconds).
    pub fn plus(&self, unit: &str, amount: f64) -> Option<Dt> {
        let unit = normalize_unit(unit)?;
        let whole = amount.trunc();
        let frac = amount - whole;
        let (mut years, mut months, mut days) = (0i64, 0i64, 0i64);
        let mut millis = 0f64;
        match unit {
            "years" => years = whole as i64,
            "quarters" => months = whole as i64 * 3,
            "months" => months = whole as i64,
            "weeks" => days = whole as i64 * 7,
            "days" => days = whole as i64,
            _ => millis = amount * unit_ms(unit),
        }
        if matches!(unit, "years" | "quarters" | "months" | "weeks" | "days") {
            millis = frac * unit_ms(unit);
        }
        let mut ms = self.plus_calendar(years, months, days).ms;
        if millis != 0.0 {
            ms += millis.round() as i64;
        }
        (ms.abs() < 8_640_000_000_000_000).then(|| Dt { ms, zone: self.zone.clone() })
    }

    /// Years, months and days added in wall-clock time (the day clamped to
    /// the new month's length first, as Luxon does).
    fn plus_calendar(&self, years: i64, months: i64, days: i64) -> Dt {
        if years == 0 && months == 0 && days == 0 {
            return self.clone();
        }
        let f = self.fields();
        let y = i64::from(f.year) + years;
        let m = i64::from(f.month) + months;
        let (ny, nm) = (y + (m - 1).div_euclid(12), (m - 1).rem_euclid(12) + 1);
        let day = i64::from(f.day.min(days_in_month(ny as i32, nm as u32))) + days;
        let local = local_ts(ny, nm, day, i64::from(f.hour), i64::from(f.minute), i64::from(f.second), i64::from(f.ms));
        Dt::from_local(local, &self.zone, Some(self.offset()))
    }

    /// Luxon `startOf(unit)` (weeks start on Monday).
    pub fn start_of(&self, unit: &str) -> Option<Dt> {
        let unit = normalize_unit(unit)?;
        let mut f = self.fields();
        match unit {
            "years" => {
                f.month = 1;
                f.day = 1;
            }
            "quarters" => {
                f.month = (f.month - 1) / 3 * 3 + 1;
                f.day = 1;
            }
            "months" => f.day = 1,
            "weeks" => {
                let back = i64::from(self.weekday()) - 1;
                let local = local_ts(i64::from(f.year), i64::from(f.month), i64::from(f.day) - back, 0, 0, 0, 0);
                return Some(Dt::from_local(local, &self.zone, Some(self.offset())));
            }
            _ => {}
        }
        let keep = ["years", "quarters", "months", "weeks", "days", "hours", "minutes", "seconds", "milliseconds"];
        let idx = keep.iter().position(|u| *u == unit)?;
        if idx <= 4 {
            f.hour = 0;
        }
        if idx <= 5 {
            f.minute = 0;
        }
        if idx <= 6 {
            f.second = 0;
        }
        if idx <= 7 {
            f.ms = 0;
        }
        let local = local_ts(i64::from(f.year), i64::from(f.month), i64::from(f.day), i64::from(f.hour), i64::from(f.minute), i64::from(f.second), i64::from(f.ms));
        Some(Dt::from_local(local, &self.zone, Some(self.offset())))
    }

    /// Luxon `get(unit)` for the units n8n extracts.
    pub fn get(&self, part: &str) -> Value {
        let f = self.fields();
        match part {
            "year" => json!(f.year),
            "month" => json!(f.month),
            "day" => json!(f.day),
            "hour" => json!(f.hour),
            "minute" => json!(f.minute),
            "second" => json!(f.second),
            "millisecond" => json!(f.ms),
            "week" | "weekNumber" => json!(self.iso_week().1),
            "weekYear" => json!(self.iso_week().0),
            "weekday" => json!(self.weekday()),
            "ordinal" => json!(self.ordinal()),
            "quarter" => json!(self.quarter()),
            _ => Value::Null,
        }
    }
}

fn pad_year(y: i32) -> String {
    if (0..=9999).contains(&y) {
        format!("{y:04}")
    } else {
        format!("{}{:06}", if y < 0 { '-' } else { '+' }, y.abs())
    }
}

/// Luxon's `Duration.normalizeUnit` (singular or plural, any case).
pub fn normalize_unit(u: &str) -> Option<&'static str> {
    Some(match u.to_ascii_lowercase().as_str() {
        "year" | "years" => "years",
        "quarter" | "quarters" => "quarters",
        "month" | "months" => "months",
        "week" | "weeks" => "weeks",
        "day" | "days" => "days",
        "hour" | "hours" => "hours",
        "minute" | "minutes" => "minutes",
        "second" | "seconds" => "seconds",
        "millisecond" | "milliseconds" => "milliseconds",
        _ => return None,
    })
}

/// Luxon's casual conversion to milliseconds.
fn unit_ms(unit: &str) -> f64 {
    match unit {
        "years" => 365.0 * 86_400_000.0,
        "quarters" => 91.0 * 86_400_000.0,
        "months" => 30.0 * 86_400_000.0,
        "weeks" => 7.0 * 86_400_000.0,
        "days" => 86_400_000.0,
        "hours" => 3_600_000.0,
        "minutes" => 60_000.0,
        "seconds" => 1000.0,
        _ => 1.0,
    }
}

const DIFF_ORDER: [&str; 9] = ["years", "quarters", "months", "weeks", "days", "hours", "minutes", "seconds", "milliseconds"];

/// Luxon `later.diff(earlier, units)` as `Duration.toObject()` (keys in
/// Luxon's order; a negative difference negates every unit).
pub fn diff(end: &Dt, start: &Dt, units: &[String]) -> Map<String, Value> {
    let mut wanted: Vec<&str> = units.iter().filter_map(|u| normalize_unit(u)).collect();
    if wanted.is_empty() {
        wanted.push("milliseconds");
    }
    wanted.sort_by_key(|u| DIFF_ORDER.iter().position(|x| x == u));
    wanted.dedup();
    let negative = start.ms > end.ms;
    let (earlier, later) = if negative { (end, start) } else { (start, end) };
    let mut results: Vec<(&str, f64)> = vec![];
    // One `plus` of the whole duration so far, as Luxon adds it.
    let plus_all = |base: &Dt, r: &[(&str, f64)]| -> Dt {
        let get = |u: &str| r.iter().find(|x| x.0 == u).map_or(0.0, |x| x.1) as i64;
        base.plus_calendar(get("years"), get("months") + get("quarters") * 3, get("days") + get("weeks") * 7)
    };
    let mut cursor = earlier.clone();
    let mut high_water = earlier.clone();
    let mut lowest: Option<&str> = None;
    // Whether `cursor` and `high_water` are the same object in Luxon's code.
    let mut same_object = true;
    for unit in ["years", "quarters", "months", "weeks", "days"] {
        if !wanted.contains(&unit) {
            continue;
        }
        lowest = Some(unit);
        let (a, b) = (cursor.fields(), later.fields());
        let value = match unit {
            "years" => f64::from(b.year - a.year),
            "quarters" => f64::from(later.quarter() as i32 - cursor.quarter() as i32 + (b.year - a.year) * 4),
            "months" => f64::from(b.month as i32 - a.month as i32 + (b.year - a.year) * 12),
            "weeks" => {
                let days = day_diff(&cursor, later);
                ((days - days % 7) / 7) as f64
            }
            _ => day_diff(&cursor, later) as f64,
        };
        results.push((unit, value));
        high_water = plus_all(earlier, &results);
        if high_water.ms > later.ms {
            if let Some(last) = results.last_mut() {
                last.1 -= 1.0;
            }
            cursor = plus_all(earlier, &results);
            same_object = false;
            if cursor.ms > later.ms {
                high_water = cursor.clone();
                if let Some(last) = results.last_mut() {
                    last.1 -= 1.0;
                }
                cursor = plus_all(earlier, &results);
            }
        } else {
            cursor = high_water.clone();
            same_object = true;
        }
    }
    let remaining = (later.ms - cursor.ms) as f64;
    let lower: Vec<&str> = wanted.iter().copied().filter(|u| matches!(*u, "hours" | "minutes" | "seconds" | "milliseconds")).collect();
    if lower.is_empty() {
        if let Some(low) = lowest {
            if high_water.ms < later.ms {
                high_water = cursor.plus(low, 1.0).unwrap_or_else(|| cursor.clone());
                same_object = false;
            }
            if !same_object && high_water.ms != cursor.ms {
                if let Some(r) = results.iter_mut().find(|r| r.0 == low) {
                    r.1 += remaining / (high_water.ms - cursor.ms) as f64;
                }
            }
        }
    } else {
        // `Duration.fromMillis(remaining).shiftTo(...lower)`: whole units, the last one fractional.
        let mut rest = remaining;
        for (k, u) in lower.iter().enumerate() {
            let per = unit_ms(u);
            let v = if k == lower.len() - 1 { rest / per } else { (rest / per).trunc() };
            rest -= v * per;
            results.push((u, v));
        }
    }
    results.sort_by_key(|r| DIFF_ORDER.iter().position(|x| *x == r.0));
    results
        .into_iter()
        .map(|(u, v)| {
            let v = if negative && v != 0.0 { -v } else { v };
            (u.to_string(), super::conditions::num_value(v))
        })
        .collect()
}

fn day_diff(earlier: &Dt, later: &Dt) -> i64 {
    let start = |d: &Dt| {
        let f = d.fields();
        local_ts(i64::from(f.year), i64::from(f.month), i64::from(f.day), 0, 0, 0, 0)
    };
    (start(later) - start(earlier)).div_euclid(DAY_MS)
}

/// Luxon `Duration.toISO()` of a `toObject()` map.
pub fn duration_iso(d: &Map<String, Value>) -> String {
    let g = |k: &str| d.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let n = |x: f64| super::conditions::num_to_string(x, &serde_json::Number::from_f64(x).unwrap_or_else(|| 0.into()));
    let mut s = String::from("P");
    if g("years") != 0.0 {
        s += &format!("{}Y", n(g("years")));
    }
    if g("months") != 0.0 || g("quarters") != 0.0 {
        s += &format!("{}M", n(g("months") + g("quarters") * 3.0));
    }
    if g("weeks") != 0.0 {
        s += &format!("{}W", n(g("weeks")));
    }
    if g("days") != 0.0 {
        s += &format!("{}D", n(g("days")));
    }
    let (h, mi, se, ms) = (g("hours"), g("minutes"), g("seconds"), g("milliseconds"));
    if h != 0.0 || mi != 0.0 || se != 0.0 || ms != 0.0 {
        s.push('T');
    }
    if h != 0.0 {
        s += &format!("{}H", n(h));
    }
    if mi != 0.0 {
        s += &format!("{}M", n(mi));
    }
    if se != 0.0 || ms != 0.0 {
        s += &format!("{}S", n(((se + ms / 1000.0) * 1000.0).round() / 1000.0));
    }
    if s == "P" {
        s += "T0S";
    }
    s
}

// ---- names ----------------------------------------------------------------

const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

fn month_name(m: u32) -> &'static str {
    MONTHS[(m as usize + 11) % 12]
}

fn weekday_name(w: u32) -> &'static str {
    WEEKDAYS[(w as usize + 6) % 7]
}

/// Zone abbreviation as Intl's `en-US` short name gives it (`EST`, `GMT+2`).
fn short_zone_name(d: &Dt) -> String {
    let o = d.offset();
    if let Zone::Iana(tz) = &d.zone {
        let utc = Utc.timestamp_millis_opt(d.ms).single().unwrap_or_default();
        let abbr = tz.offset_from_utc_datetime(&utc.naive_utc()).to_string();
        let us = tz.name().starts_with("America/") || tz.name().starts_with("US/") || tz.name().starts_with("Pacific/Honolulu");
        if us && abbr.chars().all(|c| c.is_ascii_alphabetic()) {
            return abbr;
        }
    }
    if o == 0 {
        return if d.zone.fixed_zero() { "UTC".into() } else { "GMT".into() };
    }
    let (h, m) = (o.abs() / 60, o.abs() % 60);
    let sign = if o < 0 { '-' } else { '+' };
    if m == 0 {
        format!("GMT{sign}{h}")
    } else {
        format!("GMT{sign}{h}:{m:02}")
    }
}

fn meridiem(h: u32) -> &'static str {
    if h < 12 {
        "AM"
    } else {
        "PM"
    }
}

fn h12(h: u32) -> u32 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

fn pad(n: i64, width: usize) -> String {
    if n < 0 {
        format!("-{:0width$}", -n, width = width)
    } else {
        format!("{n:0width$}")
    }
}

// ---- Luxon formatting -------------------------------------------------------

/// Splits a Luxon format into tokens (runs of one letter) and literals
/// (`'quoted'`, or anything that is not a letter).
fn luxon_tokens(fmt: &str) -> Vec<(String, bool)> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out: Vec<(String, bool)> = vec![];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // `''` is a literal quote.
            if chars.get(i + 1) == Some(&'\'') {
                out.push(("'".into(), true));
                i += 2;
                continue;
            }
            let mut lit = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                lit.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push((lit, true));
            continue;
        }
        let mut j = i;
        while j < chars.len() && chars[j] == c {
            j += 1;
        }
        let run: String = chars[i..j].iter().collect();
        out.push((run, !c.is_ascii_alphabetic()));
        i = j;
    }
    out
}

/// Luxon `toFormat(fmt)` in `en-US`.
pub fn format_luxon(d: &Dt, fmt: &str) -> String {
    let f = d.fields();
    let mut s = String::new();
    for (t, literal) in luxon_tokens(fmt) {
        if literal {
            s.push_str(&t);
            continue;
        }
        let o = d.offset();
        let v = match t.as_str() {
            "S" => f.ms.to_string(),
            "SSS" => pad(i64::from(f.ms), 3),
            "u" => pad(i64::from(f.ms), 3),
            "uu" => pad(i64::from(f.ms / 10), 2),
            "uuu" => (f.ms / 100).to_string(),
            "s" => f.second.to_string(),
            "ss" => pad(i64::from(f.second), 2),
            "m" => f.minute.to_string(),
            "mm" => pad(i64::from(f.minute), 2),
            "h" => h12(f.hour).to_string(),
            "hh" => pad(i64::from(h12(f.hour)), 2),
            "H" => f.hour.to_string(),
            "HH" => pad(i64::from(f.hour), 2),
            "K" => (f.hour % 12).to_string(),
            "KK" => pad(i64::from(f.hour % 12), 2),
            "Z" => {
                if o % 60 == 0 {
                    format!("{}{}", if o < 0 { '-' } else { '+' }, o.abs() / 60)
                } else {
                    format!("{}{}:{:02}", if o < 0 { '-' } else { '+' }, o.abs() / 60, o.abs() % 60)
                }
            }
            "ZZ" => offset_text(o, true),
            "ZZZ" => offset_text(o, false),
            "ZZZZ" => short_zone_name(d),
            "ZZZZZ" => short_zone_name(d),
            "z" => d.zone.name(),
            "a" => meridiem(f.hour).to_string(),
            "d" => f.day.to_string(),
            "dd" => pad(i64::from(f.day), 2),
            "c" | "E" => d.weekday().to_string(),
            "ccc" | "EEE" => weekday_name(d.weekday())[..3].to_string(),
            "cccc" | "EEEE" => weekday_name(d.weekday()).to_string(),
            "ccccc" | "EEEEE" => weekday_name(d.weekday())[..1].to_string(),
            "L" | "M" => f.month.to_string(),
            "LL" | "MM" => pad(i64::from(f.month), 2),
            "LLL" | "MMM" => month_name(f.month)[..3].to_string(),
            "LLLL" | "MMMM" => month_name(f.month).to_string(),
            "LLLLL" | "MMMMM" => month_name(f.month)[..1].to_string(),
            "y" => f.year.to_string(),
            "yy" => {
                let y = f.year.to_string();
                pad(y[y.len().saturating_sub(2)..].parse().unwrap_or(0), 2)
            }
            "yyyy" => pad(i64::from(f.year), 4),
            "yyyyyy" => pad(i64::from(f.year), 6),
            "G" => (if f.year > 0 { "AD" } else { "BC" }).to_string(),
            "GG" => (if f.year > 0 { "Anno Domini" } else { "Before Christ" }).to_string(),
            "GGGGG" => (if f.year > 0 { "A" } else { "B" }).to_string(),
            "kk" => {
                let y = d.iso_week().0.to_string();
                pad(y[y.len().saturating_sub(2)..].parse().unwrap_or(0), 2)
            }
            "kkkk" => pad(i64::from(d.iso_week().0), 4),
            "W" => d.iso_week().1.to_string(),
            "WW" => pad(i64::from(d.iso_week().1), 2),
            "n" => local_week(d).to_string(),
            "nn" => pad(i64::from(local_week(d)), 2),
            "ii" => {
                let y = f.year.to_string();
                pad(y[y.len().saturating_sub(2)..].parse().unwrap_or(0), 2)
            }
            "iiii" => pad(i64::from(f.year), 4),
            "o" => d.ordinal().to_string(),
            "ooo" => pad(i64::from(d.ordinal()), 3),
            "q" => d.quarter().to_string(),
            "qq" => pad(i64::from(d.quarter()), 2),
            "X" => d.ms.div_euclid(1000).to_string(),
            "x" => d.ms.to_string(),
            other => macro_token(d, other).unwrap_or_else(|| other.to_string()),
        };
        s.push_str(&v);
    }
    s
}

/// Week of the year with weeks starting on Sunday (`en-US`).
fn local_week(d: &Dt) -> u32 {
    let ord = d.ordinal();
    let jan1_weekday = (d.weekday() as i64 - ord as i64 + 1).rem_euclid(7);
    ((ord as i64 + jan1_weekday) / 7 + 1) as u32
}

/// Luxon's localized macro tokens in `en-US`.
fn macro_token(d: &Dt, t: &str) -> Option<String> {
    let f = d.fields();
    let short_month = &month_name(f.month)[..3];
    let time = |secs: bool| {
        if secs {
            format!("{}:{:02}:{:02} {}", h12(f.hour), f.minute, f.second, meridiem(f.hour))
        } else {
            format!("{}:{:02} {}", h12(f.hour), f.minute, meridiem(f.hour))
        }
    };
    let time24 = |secs: bool| if secs { format!("{:02}:{:02}:{:02}", f.hour, f.minute, f.second) } else { format!("{:02}:{:02}", f.hour, f.minute) };
    let date = |kind: u8| match kind {
        0 => format!("{}/{}/{}", f.month, f.day, f.year),
        1 => format!("{short_month} {}, {}", f.day, f.year),
        2 => format!("{} {}, {}", month_name(f.month), f.day, f.year),
        _ => format!("{}, {} {}, {}", weekday_name(d.weekday()), month_name(f.month), f.day, f.year),
    };
    let zone = short_zone_name(d);
    Some(match t {
        "D" => date(0),
        "DD" => date(1),
        "DDD" => date(2),
        "DDDD" => date(3),
        "t" => time(false),
        "tt" => time(true),
        "ttt" => format!("{} {zone}", time(true)),
        "tttt" => format!("{} {zone}", time(true)),
        "T" => time24(false),
        "TT" => time24(true),
        "TTT" => format!("{} {zone}", time24(true)),
        "TTTT" => format!("{} {zone}", time24(true)),
        "f" => format!("{}, {}", date(0), time(false)),
        "ff" => format!("{}, {}", date(1), time(false)),
        "fff" => format!("{} at {} {zone}", date(2), time(false)),
        "ffff" => format!("{} at {} {zone}", date(3), time(false)),
        "F" => format!("{}, {}", date(0), time(true)),
        "FF" => format!("{}, {}", date(1), time(true)),
        "FFF" => format!("{} at {} {zone}", date(2), time(true)),
        "FFFF" => format!("{} at {} {zone}", date(3), time(true)),
        _ => return None,
    })
}

// ---- parsing ----------------------------------------------------------------

/// Parsed wall clock with an optional explicit offset (minutes).
struct Parsed {
    local: i64,
    offset: Option<i32>,
}

impl Parsed {
    fn into_dt(self, zone: &Zone) -> Dt {
        match self.offset {
            Some(o) => Dt { ms: self.local - i64::from(o) * 60_000, zone: zone.clone() },
            None => Dt::from_local(self.local, zone, None),
        }
    }
}

fn num(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn valid_ymd(y: i64, m: i64, d: i64) -> bool {
    (1..=12).contains(&m) && d >= 1 && d <= i64::from(days_in_month(y as i32, m as u32))
}

/// Luxon `fromISO`: calendar, week (`2023-W15-2`) and ordinal (`2023-101`)
/// dates, basic or extended, with an optional `T` time and offset.
fn parse_iso(s: &str, allow_space: bool) -> Option<Parsed> {
    let sep = s.find('T').or_else(|| if allow_space { s.find(' ') } else { None });
    let (date, time) = match sep {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (y, m, d) = parse_iso_date(date)?;
    let (h, mi, sec, ms, offset) = match time {
        Some(t) => parse_iso_time(t)?,
        None => (0, 0, 0, 0, None),
    };
    Some(Parsed { local: local_ts(y, m, d, h, mi, sec, ms), offset })
}

fn parse_iso_date(s: &str) -> Option<(i64, i64, i64)> {
    // `+002023` / `-000123` extended years, else four digits.
    let (year, rest) = match s.strip_prefix('+').or_else(|| s.strip_prefix('-')) {
        Some(r) => {
            let y = num(r.get(..6)?)?;
            (if s.starts_with('-') { -y } else { y }, &r[6..])
        }
        None => (num(s.get(..4)?)?, &s[4..]),
    };
    // Week date.
    if let Some(w) = rest.strip_prefix("-W").or_else(|| rest.strip_prefix('W')) {
        let digits: String = w.chars().filter(|c| *c != '-').collect();
        let week = num(digits.get(..2)?)?;
        let wd = if digits.len() > 2 { num(&digits[2..3])? } else { 1 };
        let date = NaiveDate::from_isoywd_opt(year as i32, week as u32, chrono::Weekday::try_from((wd - 1) as u8).ok()?)?;
        return Some((i64::from(date.year()), i64::from(date.month()), i64::from(date.day())));
    }
    let digits = rest.strip_prefix('-').unwrap_or(rest);
    let extended = rest.starts_with('-');
    match (extended, digits.len()) {
        (_, 0) => Some((year, 1, 1)),
        (true, 2) => {
            let m = num(digits)?;
            (1..=12).contains(&m).then_some((year, m, 1))
        }
        (_, 3) => {
            let ord = num(digits)?;
            let date = NaiveDate::from_yo_opt(year as i32, ord as u32)?;
            Some((year, i64::from(date.month()), i64::from(date.day())))
        }
        (true, 5) if digits.as_bytes()[2] == b'-' => {
            let (m, d) = (num(&digits[..2])?, num(&digits[3..])?);
            valid_ymd(year, m, d).then_some((year, m, d))
        }
        (false, 4) => {
            let (m, d) = (num(&digits[..2])?, num(&digits[2..])?);
            valid_ymd(year, m, d).then_some((year, m, d))
        }
        _ => None,
    }
}

fn parse_iso_time(t: &str) -> Option<(i64, i64, i64, i64, Option<i32>)> {
    let (clock, offset) = match t.find(|c| c == 'Z' || c == 'z' || c == '+' || c == '-') {
        Some(i) => {
            let off = &t[i..];
            let o = if off.eq_ignore_ascii_case("z") { 0 } else { parse_offset(off)? };
            (&t[..i], Some(o))
        }
        None => (t, None),
    };
    let (main, frac) = match clock.find(['.', ',']) {
        Some(i) => (&clock[..i], Some(&clock[i + 1..])),
        None => (clock, None),
    };
    let parts: Vec<&str> = if main.contains(':') { main.split(':').collect() } else { main.as_bytes().chunks(2).map(|c| std::str::from_utf8(c).unwrap_or("")).collect() };
    if parts.is_empty() || parts.iter().any(|p| p.len() != 2) || parts.len() > 3 {
        return None;
    }
    let h = num(parts[0])?;
    let mi = parts.get(1).map(|p| num(p)).unwrap_or(Some(0))?;
    let sec = parts.get(2).map(|p| num(p)).unwrap_or(Some(0))?;
    let ms = match frac {
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            let f3: String = f.chars().chain("000".chars()).take(3).collect();
            num(&f3)?
        }
        Some(_) => return None,
        None => 0,
    };
    let valid = (h <= 23 || (h == 24 && mi == 0 && sec == 0 && ms == 0)) && mi <= 59 && sec <= 59;
    valid.then_some((h, mi, sec, ms, offset))
}

/// RFC 2822 / HTTP dates (`Tue, 11 Apr 2023 14:30:00 GMT`).
fn parse_rfc(s: &str) -> Option<Parsed> {
    let d = chrono::DateTime::parse_from_rfc2822(s).ok()?;
    Some(Parsed { local: d.naive_local().and_utc().timestamp_millis(), offset: Some(d.offset().local_minus_utc() / 60) })
}

fn month_from_name(w: &str) -> Option<i64> {
    let w = w.to_ascii_lowercase();
    (w.len() >= 3).then(|| MONTHS.iter().position(|m| m.to_ascii_lowercase().starts_with(&w[..3])).map(|p| p as i64 + 1)).flatten()
}

/// V8's legacy `Date` parser for the forms people write: `08/01/2022`,
/// `April 11, 2023 2:30 PM`, `11 Apr 2023 14:30:00 GMT+0200`, `2023/04/11`,
/// with an optional weekday and `(Zone Name)`.
fn parse_legacy(s: &str) -> Option<Parsed> {
    let mut numbers: Vec<(i64, usize)> = vec![];
    let mut month: Option<i64> = None;
    let mut time: Option<(i64, i64, i64, i64)> = None;
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut paren = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '(' {
            paren += 1;
            i += 1;
            continue;
        }
        if c == ')' {
            paren -= 1;
            i += 1;
            continue;
        }
        if paren > 0 || c.is_whitespace() || c == ',' {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            if chars.get(i) == Some(&':') && time.is_none() {
                let mut parts = vec![text];
                while chars.get(i) == Some(&':') {
                    i += 1;
                    let st = i;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                    parts.push(chars[st..i].iter().collect());
                }
                let mut ms = 0;
                if chars.get(i) == Some(&'.') {
                    i += 1;
                    let st = i;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                    let f: String = chars[st..i].iter().chain("000".chars().collect::<Vec<_>>().iter()).take(3).collect();
                    ms = num(&f).unwrap_or(0);
                }
                let p = |k: usize| parts.get(k).and_then(|x| num(x)).unwrap_or(0);
                time = Some((p(0), p(1), p(2), ms));
                continue;
            }
            numbers.push((num(&text)?, text.len()));
            // `-`/`/`/`.` separators inside a date.
            if matches!(chars.get(i), Some('/' | '-' | '.')) && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
            continue;
        }
        if c == '+' || (c == '-' && time.is_some()) {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ':') {
                i += 1;
            }
            offset = Some(parse_offset(&chars[start..i].iter().collect::<String>())?);
            continue;
        }
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == '.') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect::<String>().trim_end_matches('.').to_ascii_lowercase();
            match word.as_str() {
                "am" | "a.m" => pm = Some(false),
                "pm" | "p.m" => pm = Some(true),
                "z" | "utc" | "gmt" | "ut" => offset = Some(offset.unwrap_or(0)),
                "t" => {}
                w if month_from_name(w).is_some() && month.is_none() => month = month_from_name(w),
                w if WEEKDAYS.iter().any(|d| d.to_ascii_lowercase().starts_with(&w[..w.len().min(3)])) && w.len() >= 3 => {}
                "est" | "edt" | "cst" | "cdt" | "mst" | "mdt" | "pst" | "pdt" => {
                    offset = Some(match word.as_str() {
                        "est" => -300,
                        "edt" => -240,
                        "cst" => -360,
                        "cdt" => -300,
                        "mst" => -420,
                        "mdt" => -360,
                        "pst" => -480,
                        _ => -420,
                    })
                }
                _ => return None,
            }
            continue;
        }
        if c == '-' || c == '/' || c == '.' {
            i += 1;
            continue;
        }
        return None;
    }
    let year2 = |y: i64, len: usize| if len <= 2 { if y < 50 { 2000 + y } else { 1900 + y } } else { y };
    let (y, m, d) = match (month, numbers.as_slice()) {
        (Some(m), [(a, al), (b, bl)]) => {
            if *al >= 3 || *a > 31 {
                (year2(*a, *al), m, *b)
            } else {
                (year2(*b, *bl), m, *a)
            }
        }
        (Some(m), [(d, _)]) => (2001, m, *d),
        (None, [(a, al), (b, _), (c, cl)]) => {
            if *al >= 3 {
                (year2(*a, *al), *b, *c)
            } else {
                (year2(*c, *cl), *a, *b)
            }
        }
        _ => return None,
    };
    if !valid_ymd(y, m, d) {
        return None;
    }
    let (mut h, mi, sec, ms) = time.unwrap_or((0, 0, 0, 0));
    match pm {
        Some(true) if h < 12 => h += 12,
        Some(false) if h == 12 => h = 0,
        _ => {}
    }
    if h > 24 || mi > 59 || sec > 59 {
        return None;
    }
    Some(Parsed { local: local_ts(y, m, d, h, mi, sec, ms), offset })
}

/// n8n's date-string parsing for the Date & Time node: ISO (also with a
/// space), RFC 2822 / HTTP, then JavaScript's `Date` forms. A string without
/// an offset is wall-clock time in `zone`; one with an offset is that instant,
/// shown in `zone`.
pub fn parse_string(s: &str, zone: &Zone) -> Option<Dt> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let p = parse_iso(s, true).or_else(|| parse_rfc(s)).or_else(|| parse_legacy(s))?;
    Some(p.into_dt(zone))
}

/// `new Date(string)` in a UTC process. `None` is an Invalid Date.
pub fn js_date_parse(s: &str) -> Option<i64> {
    js_date_parse_in(s, &Zone::Utc)
}

/// `new Date(string)` in a process whose local zone is `local`: ISO
/// date-only forms are UTC (the spec's exception), forms with an offset are
/// that instant, ISO date-times without one and the legacy forms
/// (`08/01/2022`, `Aug 1 2022 10:00`) are wall clock in `local`.
pub fn js_date_parse_in(s: &str, local: &Zone) -> Option<i64> {
    let s = s.trim();
    if let Some(p) = parse_iso(s, false) {
        let date_only = !s.contains('T');
        return Some(p.into_dt(if date_only { &Zone::Utc } else { local }).ms);
    }
    parse_legacy(s).map(|p| p.into_dt(local).ms)
}

/// Luxon `fromFormat(text, format)`; `None` when the text does not fit.
pub fn parse_luxon_format(text: &str, fmt: &str, zone: &Zone) -> Option<Dt> {
    let toks: Vec<(String, bool)> = luxon_tokens(fmt);
    let mut spec: Vec<(String, bool)> = vec![];
    for (t, lit) in toks {
        spec.push((t, lit));
    }
    parse_with_tokens(text, &spec, zone, Dialect::Luxon)
}

/// moment `moment(text, format[, strict])` / `moment.tz(text, format, zone)`.
pub fn parse_moment_format(text: &str, fmt: &str, zone: &Zone, strict: bool) -> Option<Dt> {
    let spec = moment_tokens(fmt);
    let d = parse_with_tokens(text, &spec, zone, if strict { Dialect::MomentStrict } else { Dialect::Moment })?;
    Some(d)
}

#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Luxon,
    Moment,
    MomentStrict,
}

fn parse_with_tokens(text: &str, spec: &[(String, bool)], zone: &Zone, dialect: Dialect) -> Option<Dt> {
    let t: Vec<char> = text.chars().collect();
    let mut i = 0;
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut ms) = (None::<i64>, None::<i64>, None::<i64>, 0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut offset: Option<i32> = None;
    let mut epoch: Option<i64> = None;
    let strict = dialect != Dialect::Moment;
    let take_digits = |i: &mut usize, min: usize, max: usize| -> Option<i64> {
        let start = *i;
        while *i < t.len() && *i - start < max && t[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i - start >= min).then(|| t[start..*i].iter().collect::<String>().parse().ok()).flatten()
    };
    for (tok, lit) in spec {
        if *lit {
            for c in tok.chars() {
                if t.get(i) == Some(&c) {
                    i += 1;
                } else if strict || !(c.is_whitespace() || c.is_ascii_punctuation()) {
                    return None;
                }
            }
            continue;
        }
        if !strict {
            while i < t.len() && !t[i].is_alphanumeric() && t[i] != '+' && t[i] != '-' {
                i += 1;
            }
        }
        let word = |i: &mut usize| -> String {
            let start = *i;
            while *i < t.len() && t[*i].is_alphabetic() {
                *i += 1;
            }
            t[start..*i].iter().collect()
        };
        let luxon = dialect == Dialect::Luxon;
        match tok.as_str() {
            "yyyy" if luxon => year = Some(take_digits(&mut i, 4, 4)?),
            "YYYY" if !luxon => year = Some(take_digits(&mut i, if strict { 4 } else { 1 }, 4)?),
            "y" if luxon => year = Some(take_digits(&mut i, 1, 6)?),
            "yy" | "YY" => {
                let y = take_digits(&mut i, 2, 2)?;
                year = Some(if luxon { if y > 60 { 1900 + y } else { 2000 + y } } else if y > 68 { 1900 + y } else { 2000 + y });
            }
            "M" | "L" => month = Some(take_digits(&mut i, 1, 2)?),
            "MM" | "LL" => month = Some(take_digits(&mut i, 2, 2)?),
            "MMM" | "MMMM" | "LLL" | "LLLL" => month = Some(month_from_name(&word(&mut i))?),
            "d" if luxon => day = Some(take_digits(&mut i, 1, 2)?),
            "dd" if luxon => day = Some(take_digits(&mut i, 2, 2)?),
            "D" if !luxon => day = Some(take_digits(&mut i, 1, 2)?),
            "DD" if !luxon => day = Some(take_digits(&mut i, 2, 2)?),
            "Do" if !luxon => {
                day = Some(take_digits(&mut i, 1, 2)?);
                word(&mut i);
            }
            "H" | "k" => hour = take_digits(&mut i, 1, 2)?,
            "HH" | "kk" => hour = take_digits(&mut i, 2, 2)?,
            "h" => hour = take_digits(&mut i, 1, 2)?,
            "hh" => hour = take_digits(&mut i, 2, 2)?,
            "m" => minute = take_digits(&mut i, 1, 2)?,
            "mm" => minute = take_digits(&mut i, 2, 2)?,
            "s" => second = take_digits(&mut i, 1, 2)?,
            "ss" => second = take_digits(&mut i, 2, 2)?,
            "S" | "SS" | "SSS" | "u" => {
                let start = i;
                let v = take_digits(&mut i, 1, 9)?;
                let len = i - start;
                ms = (v as f64 * 10f64.powi(3 - len as i32)).round() as i64;
            }
            "a" | "A" => {
                let w = word(&mut i).to_ascii_lowercase();
                pm = Some(match w.as_str() {
                    "am" => false,
                    "pm" => true,
                    _ => return None,
                });
            }
            "E" | "EEE" | "EEEE" | "ccc" | "cccc" | "ddd" | "dddd" => {
                word(&mut i);
            }
            "Z" | "ZZ" | "ZZZ" => {
                let start = i;
                if t.get(i).is_some_and(|c| *c == 'Z' || *c == 'z') {
                    i += 1;
                    offset = Some(0);
                } else {
                    i += 1;
                    while i < t.len() && (t[i].is_ascii_digit() || t[i] == ':') {
                        i += 1;
                    }
                    offset = Some(parse_offset(&t[start..i].iter().collect::<String>())?);
                }
            }
            "X" => epoch = Some(take_digits(&mut i, 1, 15)? * 1000),
            "x" => epoch = Some(take_digits(&mut i, 1, 18)?),
            _ => return None,
        }
    }
    if i < t.len() && strict {
        return None;
    }
    if let Some(ms) = epoch {
        return Some(Dt { ms, zone: zone.clone() });
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let (y, m, d) = (year.unwrap_or_else(|| i64::from(Utc::now().year())), month.unwrap_or(1), day.unwrap_or(1));
    if !valid_ymd(y, m, d) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(Parsed { local: local_ts(y, m, d, hour, minute, second, ms), offset }.into_dt(zone))
}

// ---- moment.js ------------------------------------------------------------------

const MOMENT_TOKENS: &[&str] = &[
    "YYYYYY", "YYYY", "YY", "Y", "gggg", "gg", "GGGG", "GG", "MMMM", "MMM", "MM", "Mo", "M", "Qo", "Q", "DDDD", "DDDo", "DDD", "DD", "Do", "D", "dddd", "ddd", "dd", "do",
    "d", "e", "E", "ww", "wo", "w", "WW", "Wo", "W", "HH", "H", "hh", "h", "kk", "k", "mm", "m", "ss", "s", "SSS", "SS", "S", "A", "a", "ZZ", "Z", "zz", "z", "X", "x", "LTS",
];
const MOMENT_MACROS: &[&str] = &["LTS", "LT", "LLLL", "LLL", "LL", "L", "llll", "lll", "ll", "l"];

/// Splits a moment format into tokens and literals (`[escaped]`, or text
/// that is no token).
fn moment_tokens(fmt: &str) -> Vec<(String, bool)> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out: Vec<(String, bool)> = vec![];
    let mut i = 0;
    'outer: while i < chars.len() {
        if chars[i] == '[' {
            if let Some(end) = chars[i + 1..].iter().position(|&c| c == ']') {
                out.push((chars[i + 1..i + 1 + end].iter().collect(), true));
                i += end + 2;
                continue;
            }
        }
        let rest: String = chars[i..].iter().collect();
        for m in MOMENT_MACROS.iter().chain(MOMENT_TOKENS.iter()) {
            if rest.starts_with(m) {
                out.push((m.to_string(), false));
                i += m.chars().count();
                continue 'outer;
            }
        }
        let s = rest.chars().take_while(|c| !c.is_ascii_alphabetic() && *c != '[').collect::<String>();
        let s = if s.is_empty() { chars[i].to_string() } else { s };
        i += s.chars().count();
        out.push((s, true));
    }
    out
}

fn ordinal_suffix(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// moment `format(fmt)` in the `en` locale.
pub fn format_moment(d: &Dt, fmt: &str) -> String {
    let f = d.fields();
    let o = d.offset();
    let wd = d.weekday() % 7; // moment: 0 = Sunday
    let mut s = String::new();
    for (t, lit) in moment_tokens(fmt) {
        if lit {
            s.push_str(&t);
            continue;
        }
        let v = match t.as_str() {
            "YYYYYY" => format!("{}{:06}", if f.year < 0 { '-' } else { '+' }, f.year.abs()),
            "YYYY" => {
                if f.year <= 9999 {
                    pad(i64::from(f.year), 4)
                } else {
                    format!("+{}", f.year)
                }
            }
            "YY" => pad(i64::from(f.year.rem_euclid(100)), 2),
            "Y" => f.year.to_string(),
            "gggg" | "GGGG" => pad(i64::from(d.iso_week().0), 4),
            "gg" | "GG" => pad(i64::from(d.iso_week().0.rem_euclid(100)), 2),
            "M" => f.month.to_string(),
            "Mo" => ordinal_suffix(f.month),
            "MM" => pad(i64::from(f.month), 2),
            "MMM" => month_name(f.month)[..3].to_string(),
            "MMMM" => month_name(f.month).to_string(),
            "Q" => d.quarter().to_string(),
            "Qo" => ordinal_suffix(d.quarter()),
            "D" => f.day.to_string(),
            "Do" => ordinal_suffix(f.day),
            "DD" => pad(i64::from(f.day), 2),
            "DDD" => d.ordinal().to_string(),
            "DDDo" => ordinal_suffix(d.ordinal()),
            "DDDD" => pad(i64::from(d.ordinal()), 3),
            "d" | "e" => wd.to_string(),
            "do" => ordinal_suffix(wd),
            "dd" => weekday_name(d.weekday())[..2].to_string(),
            "ddd" => weekday_name(d.weekday())[..3].to_string(),
            "dddd" => weekday_name(d.weekday()).to_string(),
            "E" => d.weekday().to_string(),
            "w" => local_week(d).to_string(),
            "wo" => ordinal_suffix(local_week(d)),
            "ww" => pad(i64::from(local_week(d)), 2),
            "W" => d.iso_week().1.to_string(),
            "Wo" => ordinal_suffix(d.iso_week().1),
            "WW" => pad(i64::from(d.iso_week().1), 2),
            "H" => f.hour.to_string(),
            "HH" => pad(i64::from(f.hour), 2),
            "h" => h12(f.hour).to_string(),
            "hh" => pad(i64::from(h12(f.hour)), 2),
            "k" => (if f.hour == 0 { 24 } else { f.hour }).to_string(),
            "kk" => pad(i64::from(if f.hour == 0 { 24 } else { f.hour }), 2),
            "m" => f.minute.to_string(),
            "mm" => pad(i64::from(f.minute), 2),
            "s" => f.second.to_string(),
            "ss" => pad(i64::from(f.second), 2),
            "S" => (f.ms / 100).to_string(),
            "SS" => pad(i64::from(f.ms / 10), 2),
            "SSS" => pad(i64::from(f.ms), 3),
            "A" => meridiem(f.hour).to_string(),
            "a" => meridiem(f.hour).to_ascii_lowercase(),
            "Z" => offset_text(o, true),
            "ZZ" => offset_text(o, false),
            "z" | "zz" => short_zone_name(d),
            "X" => d.ms.div_euclid(1000).to_string(),
            "x" => d.ms.to_string(),
            "LT" => format!("{}:{:02} {}", h12(f.hour), f.minute, meridiem(f.hour)),
            "LTS" => format!("{}:{:02}:{:02} {}", h12(f.hour), f.minute, f.second, meridiem(f.hour)),
            "L" => format!("{:02}/{:02}/{:04}", f.month, f.day, f.year),
            "l" => format!("{}/{}/{}", f.month, f.day, f.year),
            "LL" => format!("{} {}, {}", month_name(f.month), f.day, f.year),
            "ll" => format!("{} {}, {}", &month_name(f.month)[..3], f.day, f.year),
            "LLL" => format!("{} {}, {} {}:{:02} {}", month_name(f.month), f.day, f.year, h12(f.hour), f.minute, meridiem(f.hour)),
            "lll" => format!("{} {}, {} {}:{:02} {}", &month_name(f.month)[..3], f.day, f.year, h12(f.hour), f.minute, meridiem(f.hour)),
            "LLLL" => format!("{}, {} {}, {} {}:{:02} {}", weekday_name(d.weekday()), month_name(f.month), f.day, f.year, h12(f.hour), f.minute, meridiem(f.hour)),
            "llll" => format!("{}, {} {}, {} {}:{:02} {}", &weekday_name(d.weekday())[..3], &month_name(f.month)[..3], f.day, f.year, h12(f.hour), f.minute, meridiem(f.hour)),
            other => other.to_string(),
        };
        s.push_str(&v);
    }
    s
}

/// moment's string parsing without a format: ISO 8601 (wall clock in
/// `zone` when it has no offset), RFC 2822, else its `new Date(string)`
/// fallback read in `fallback` (the process zone for `moment(s)`, UTC for
/// `moment.tz(s, zone)`, which appends " UTC"), the instant kept and shown in
/// `zone`. `None` is an invalid moment.
pub fn moment_parse(s: &str, zone: &Zone, fallback: &Zone) -> Option<Dt> {
    let s = s.trim();
    if let Some(p) = parse_iso(s, true) {
        return Some(p.into_dt(zone));
    }
    if let Some(p) = parse_rfc(s) {
        return Some(p.into_dt(zone));
    }
    parse_legacy(s).map(|p| Dt { ms: p.into_dt(fallback).ms, zone: zone.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ny() -> Zone {
        Zone::parse("America/New_York").expect("zone")
    }

    #[test]
    fn iso_round_trip_and_zones() {
        let d = parse_string("2023-04-11T13:51:59.965+00:00", &Zone::parse("Etc/GMT").expect("zone")).expect("parse");
        assert_eq!(d.to_iso(), "2023-04-11T13:51:59.965+00:00");
        assert_eq!(d.set_zone(Zone::Utc).to_iso(), "2023-04-11T13:51:59.965Z");
        assert_eq!(parse_string("2023-04-11T14:30:00+05:00", &ny()).expect("p").get("hour"), json!(5));
        assert_eq!(parse_string("2023-04-11T14:30:00", &ny()).expect("p").get("hour"), json!(14));
        assert_eq!(parse_string("April 11, 2023 2:30 PM", &ny()).expect("p").get("hour"), json!(14));
        assert_eq!(parse_string("2014-08-06 10:00:00 AM", &ny()).expect("p").get("hour"), json!(10));
        assert_eq!(parse_string("2023-04-11T14:30:00+0500", &ny()).expect("p").get("hour"), json!(5));
        assert!(parse_string("not-a-date", &ny()).is_none());
    }

    #[test]
    fn calendar_math_and_diff() {
        let d = parse_string("2023-01-31T10:00:00Z", &Zone::Utc).expect("p");
        assert_eq!(d.plus("months", 1.0).expect("plus").to_iso(), "2023-02-28T10:00:00.000Z");
        assert_eq!(d.start_of("week").expect("start").to_iso(), "2023-01-30T00:00:00.000Z");
        let e = parse_string("2023-03-15T16:00:00Z", &Zone::Utc).expect("p");
        let out = diff(&e, &d, &["month".into(), "day".into(), "hour".into()]);
        assert_eq!(Value::Object(out), json!({ "months": 1, "days": 15, "hours": 6 }));
        assert_eq!(Value::Object(diff(&d, &e, &["day".into()])), json!({ "days": -43.25 }));
        // A DST change keeps wall-clock days.
        let before = parse_string("2023-03-11T12:00:00", &ny()).expect("p");
        assert_eq!(before.plus("days", 1.0).expect("plus").to_iso(), "2023-03-12T12:00:00.000-04:00");
        assert_eq!(duration_iso(&diff(&e, &d, &["day".into()])), "P43.25D");
    }

    #[test]
    fn luxon_and_moment_formats() {
        let d = parse_string("2023-04-09T07:05:03.045Z", &Zone::Utc).expect("p");
        assert_eq!(format_luxon(&d, "yyyy/MM/dd HH:mm:ss.SSS 'week' W EEE MMMM a"), "2023/04/09 07:05:03.045 week 14 Sun April AM");
        assert_eq!(format_luxon(&d, "X x"), "1681023903 1681023903045");
        assert_eq!(format_moment(&d, "YYYY-MM-DD [at] h:mm A dddd Do"), "2023-04-09 at 7:05 AM Sunday 9th");
        assert_eq!(parse_moment_format("2022-01-12", "YYYY-DD-MM", &Zone::Utc, true).expect("p").to_iso(), "2022-12-01T00:00:00.000Z");
        assert_eq!(js_date_parse("08/01/2022"), Some(1_659_312_000_000));
    }
}
